/**
 * Personalization: elements marked data-svc-zone="<zone name>" keep their default content
 * (and its height, reserved with min-height) until /api/decide answers within the budget;
 * then a zone with a variant shows it. Nothing is replaced when the call fails or is late.
 */

export const DECIDE_BUDGET_MS = 1500;

interface Zone {
  zone_id: string;
  name: string;
  content: { kind: string; body: string } | null;
  variant_id: string | null;
}

export type RenderReport = (variantId: string, ok: boolean, error?: string) => void;

/** Fills the page's zones; resolves with the variant ids shown. */
export async function fillZones(base: string, query: string, report: RenderReport): Promise<string[]> {
  const els = Array.from(document.querySelectorAll<HTMLElement>('[data-svc-zone]'));
  const shown: string[] = [];
  if (!els.length) return shown;
  const ctrl = new AbortController();
  const t = setTimeout(() => ctrl.abort(), DECIDE_BUDGET_MS);
  let zones: Zone[];
  try {
    const r = await fetch(`${base}/api/decide?${query}`, { signal: ctrl.signal });
    if (!r.ok) return shown;
    zones = ((await r.json()) as { zones: Zone[] }).zones;
  } catch {
    return shown;
  } finally {
    clearTimeout(t);
  }
  for (const z of zones) {
    if (!z.content || !z.variant_id) continue;
    for (const el of els) {
      if (el.dataset.svcZone !== z.name && el.dataset.svcZone !== z.zone_id) continue;
      try {
        el.style.minHeight = `${el.offsetHeight}px`;
        if (z.content.kind === 'html') el.innerHTML = z.content.body;
        el.dataset.svcVariant = z.variant_id;
        el.dispatchEvent(new CustomEvent('svc:zone', { bubbles: true, detail: z }));
        shown.push(z.variant_id);
        report(z.variant_id, true);
      } catch (err) {
        report(z.variant_id, false, String(err).slice(0, 500));
      }
    }
  }
  return shown;
}
