import type { Dispatcher } from 'undici';
import type { Store } from '../../store/store.js';
import type { FireRow, TriggerEndpointRow } from '../../store/triggers.js';
import { sendSigned, type AttemptResult } from '../../outbound/sender.js';
import { endpointKey } from '../../outbound/signer.js';
import { MESSAGE_EVENT } from './service.js';

/**
 * One signed POST of a fire's message to the site's trigger endpoint (`url`:
 * its live URL for a due fire, its test URL for a test), signed with the
 * endpoint's secret, else the site_id; the fire id is the delivery id. Never
 * throws. The worker and the test tool both send through here.
 */
export function sendFire(
  http: Dispatcher,
  store: Store,
  endpoint: Pick<TriggerEndpointRow, 'secret_enc'>,
  url: string,
  fire: Pick<FireRow, 'id' | 'site_id'>,
  body: string,
): Promise<AttemptResult> {
  return sendSigned({
    dispatcher: http,
    url,
    body,
    key: endpointKey(store.secrets, endpoint.secret_enc, fire.site_id),
    eventType: MESSAGE_EVENT,
    deliveryId: fire.id,
  });
}
