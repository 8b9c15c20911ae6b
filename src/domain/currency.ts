import { AppError } from '../errors/app-error.js';

/** The ISO 4217 currency codes this runtime knows (Intl), e.g. USD, EUR, JPY. */
const ISO_4217 = new Set(Intl.supportedValuesOf('currency'));

/** Whether `code` is an ISO 4217 currency code, upper case as stored. */
export function isCurrencyCode(code: string): boolean {
  return ISO_4217.has(code);
}

/** Refuses (400 validation_failed naming `field`) a currency that is not an ISO 4217 code. */
export function assertCurrency(code: string, field = 'currency'): void {
  if (!isCurrencyCode(code)) {
    throw new AppError('validation_failed', `${field}: ${JSON.stringify(code.slice(0, 16))} is not an ISO 4217 currency code such as USD or EUR`, { field });
  }
}
