import { onCLS, onINP, onLCP } from 'web-vitals';
import { deleteCookie, readCookie, writeCookie } from './cookies.js';
import { bytes, CAPS, enqueue, flushOnHide, randomId, start, stop } from './send.js';
import { fillZones } from './zones.js';

/**
 * The svc browser tag: <script async src="https://svc.example/tag.js" data-site="site_…">.
 * Reads the site's settings, then (unless consent is required and not given, or a privacy
 * signal the site honours is on) keeps the visitor and session cookies, sends pageviews and
 * the page's events, fills the zones /api/decide picks and reports renders and web vitals.
 */

interface Settings {
  timezone: string;
  consent_required: boolean;
  honour_privacy_signals: boolean;
  url_params: string[];
}

const VISITOR = 'svc_vid';
const SESSION = 'svc_sid';
const CONSENT = 'svc_consent';
const YEAR = 400 * 86_400;
const SESSION_IDLE = 30 * 60;

const script = document.currentScript as HTMLScriptElement | null;
const site = script?.dataset.site ?? '';
const base = (script?.src ?? '').replace(/\/tag(\/[0-9a-f]+)?\.js([?#].*)?$/, '');

let settings: Settings | null = null;
let consent: boolean | null = readCookie(CONSENT) === '1' ? true : null;
let running = false;
let shown: string[] = [];
let lastUrl = '';
const vitals: Record<string, number> = {};
let vitalsSent = false;

function privacySignal(): boolean {
  const n = navigator as Navigator & { globalPrivacyControl?: boolean };
  return n.globalPrivacyControl === true || n.doNotTrack === '1';
}

function allowed(): boolean {
  if (!settings || consent === false) return false;
  if (consent) return true;
  return !settings.consent_required && !(settings.honour_privacy_signals && privacySignal());
}

/** The page URL without fragment and without query parameters the site does not keep (utm_* by default). */
function pageUrl(href = location.href): string {
  const u = new URL(href);
  u.hash = '';
  const keep = (k: string) => (settings?.url_params ?? []).some((p) => (p.endsWith('*') ? k.startsWith(p.slice(0, -1)) : k === p));
  for (const k of Array.from(u.searchParams.keys())) if (!keep(k)) u.searchParams.delete(k);
  return u.href;
}

function visitorId(): string | null {
  if (!allowed()) return null;
  let v = readCookie(VISITOR);
  if (!v) v = randomId('v');
  writeCookie(VISITOR, v, YEAR);
  return v;
}

/** Today in the site's time zone: a session ends at its midnight. */
function today(): string {
  try {
    return new Intl.DateTimeFormat('en-CA', { timeZone: settings?.timezone }).format(new Date()).replace(/\D/g, '');
  } catch {
    return new Date().toISOString().slice(0, 10).replace(/\D/g, '');
  }
}

function sessionId(): string | null {
  if (!allowed()) return null;
  const day = today();
  const [id, d] = (readCookie(SESSION) ?? '').split('.');
  const sid = id && d === day ? id : randomId('s');
  writeCookie(SESSION, `${sid}.${day}`, SESSION_IDLE);
  return sid;
}

function track(type: string, props: Record<string, unknown> = {}): boolean {
  if (!allowed()) return false;
  return enqueue('/api/events', { ...props, type, site_id: site, session_id: sessionId(), visitor_id: visitorId(), url: pageUrl(), timestamp: new Date().toISOString() });
}

/** Traits as strings, split into requests under the 32 KB cap of /api/identify (at most 100 traits each). */
function identify(traits: Record<string, unknown>): boolean {
  if (!allowed()) return false;
  const ids = { site_id: site, session_id: sessionId(), visitor_id: visitorId() };
  let chunk: Record<string, string> = {};
  let n = 0;
  const send = () => n > 0 && enqueue('/api/identify', { ...ids, traits: chunk });
  for (const [k, v] of Object.entries(traits)) {
    const value = typeof v === 'string' ? v : JSON.stringify(v);
    const next = { ...chunk, [k]: value };
    if (n === 100 || (n > 0 && bytes(JSON.stringify({ ...ids, traits: next })) > CAPS['/api/identify']! - 200)) {
      send();
      chunk = {};
      n = 0;
    }
    chunk[k] = value;
    n++;
  }
  send();
  return true;
}

/** A lead from a form (its email, name and phone fields) or from an object of those fields. */
function lead(form: HTMLFormElement | Record<string, string>): boolean {
  if (!allowed()) return false;
  const f = form instanceof HTMLFormElement ? Object.fromEntries(Array.from(new FormData(form)).map(([k, v]) => [k, String(v)])) : form;
  const formId = form instanceof HTMLFormElement ? form.id || form.getAttribute('name') : f.form_id;
  const body: Record<string, unknown> = { site_id: site, visitor_id: visitorId(), session_id: sessionId() };
  for (const k of ['email', 'name', 'phone', 'source', 'appointment_slot'] as const) if (f[k]) body[k] = f[k];
  if (formId) body.form_id = formId;
  return enqueue('/api/lead/capture', body);
}

function pageview(): void {
  const url = pageUrl();
  if (!running || url === lastUrl) return;
  lastUrl = url;
  const ref = document.referrer ? pageUrl(document.referrer) : undefined;
  track('pageview', { title: document.title, ...(ref ? { referrer: ref } : {}) });
  const q = new URLSearchParams({ site_id: site, visitor_id: visitorId()!, url });
  void fillZones(base, q.toString(), (variant_id, ok, error) => track('variant_render', { variant_id, ok, ...(error ? { error } : {}) })).then(
    (ids) => (shown = shown.concat(ids)),
  );
}

function sendVitals(): void {
  if (vitalsSent || !running || !Object.keys(vitals).length) return;
  vitalsSent = true;
  track('web_vitals', { ...vitals, variant_ids: shown });
}

let wired = false;

/** Listeners of the page's life, added once (consent may be withdrawn and given again). */
function wire(): void {
  wired = true;
  onLCP((m) => (vitals.lcp = m.value));
  onINP((m) => (vitals.inp = m.value));
  onCLS((m) => (vitals.cls = m.value));
  const leaving = () => {
    sendVitals();
    flushOnHide();
  };
  document.addEventListener('visibilitychange', () => document.visibilityState === 'hidden' && leaving());
  addEventListener('pagehide', leaving);
  for (const m of ['pushState', 'replaceState'] as const) {
    const orig = history[m];
    history[m] = function (this: History, ...args: Parameters<History['pushState']>) {
      orig.apply(this, args);
      pageview();
    };
  }
  addEventListener('popstate', pageview);
}

function run(): void {
  if (running || !allowed()) return;
  running = true;
  start(base);
  if (!wired) wire();
  pageview();
}

/** Gives (true) or withdraws (false) consent; withdrawing deletes the tag's cookies and stops sending. */
function setConsent(given: boolean): void {
  consent = given;
  if (given) {
    writeCookie(CONSENT, '1', YEAR);
    run();
    return;
  }
  running = false;
  stop();
  for (const c of [VISITOR, SESSION, CONSENT]) deleteCookie(c);
}

const api = { visitorId, sessionId, track, identify, lead, consent: setConsent };
(window as unknown as { svc: typeof api }).svc = api;

if (site && base) {
  fetch(`${base}/api/tag/config?site_id=${encodeURIComponent(site)}`, { credentials: 'omit' })
    .then((r) => (r.ok ? (r.json() as Promise<Settings>) : null))
    .then((s) => {
      settings = s;
      run();
      dispatchEvent(new CustomEvent('svc:ready'));
    })
    .catch(() => undefined);
}
