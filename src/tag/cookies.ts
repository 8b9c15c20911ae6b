/** First-party cookies of the tag, on the registrable domain of the page (host-only on localhost and IPs). */

export function readCookie(name: string): string | null {
  for (const part of document.cookie.split('; ')) {
    const eq = part.indexOf('=');
    if (part.slice(0, eq) === name) return decodeURIComponent(part.slice(eq + 1));
  }
  return null;
}

let domain: string | null | undefined;

/** The shortest suffix of the host that takes a cookie: the registrable domain (example.co.uk, not co.uk). */
function cookieDomain(): string | null {
  if (domain !== undefined) return domain;
  domain = null;
  const parts = location.hostname.split('.');
  if (parts.length < 2 || /^[\d.]+$|:/.test(location.hostname)) return domain;
  for (let i = parts.length - 2; i >= 0; i--) {
    const d = parts.slice(i).join('.');
    document.cookie = `svc_t=1; Domain=${d}; Path=/; SameSite=Lax`;
    if (readCookie('svc_t')) {
      document.cookie = `svc_t=; Domain=${d}; Path=/; Max-Age=0`;
      return (domain = d);
    }
  }
  return domain;
}

/** Writes a cookie the page can read: SameSite=Lax, Secure on https, `maxAge` seconds (0 deletes it). */
export function writeCookie(name: string, value: string, maxAge: number): void {
  const d = cookieDomain();
  const secure = location.protocol === 'https:' ? '; Secure' : '';
  document.cookie = `${name}=${encodeURIComponent(value)}; Path=/; Max-Age=${maxAge}; SameSite=Lax${d ? `; Domain=${d}` : ''}${secure}`;
}

export function deleteCookie(name: string): void {
  writeCookie(name, '', 0);
  document.cookie = `${name}=; Path=/; Max-Age=0`;
}
