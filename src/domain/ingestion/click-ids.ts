/** Click identifiers of the ad platforms found in a landing URL (case preserved, never altered). */
export interface ClickIds {
  fbclid?: string;
  gclid?: string;
}

export function clickIdsFromUrl(url: unknown): ClickIds {
  if (typeof url !== 'string' || (!url.includes('fbclid=') && !url.includes('gclid='))) return {};
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return {};
  }
  const out: ClickIds = {};
  const fbclid = parsed.searchParams.get('fbclid');
  const gclid = parsed.searchParams.get('gclid');
  if (fbclid) out.fbclid = fbclid;
  if (gclid) out.gclid = gclid;
  return out;
}
