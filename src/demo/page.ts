import type { IncomingMessage, ServerResponse } from 'node:http';

/** The strict policy the demo shop runs under: the tag needs no eval, inline script or inline style. */
export const DEMO_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; form-action 'self'; base-uri 'none'";

const escapeAttr = (s: string) => s.replace(/[&"<>]/g, (c) => `&#${c.charCodeAt(0)};`);

const PRODUCTS = [
  { sku: 'espresso-250', name: 'Espresso roast, 250 g', price: 12 },
  { sku: 'filter-500', name: 'Filter roast, 500 g', price: 19 },
  { sku: 'decaf-250', name: 'Decaf, 250 g', price: 11 },
];

function html(siteId: string): string {
  const products = PRODUCTS.map(
    (p) =>
      `<li><span>${p.name}</span> <span>$${p.price}</span> <button type="button" data-sku="${p.sku}" data-price="${p.price}">Add to cart</button></li>`,
  ).join('\n        ');
  return `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8">
    <title>svc demo shop</title>
    <meta name="viewport" content="width=device-width, initial-scale=1">
    <link rel="stylesheet" href="/demo/shop.css">
    <script async src="/tag.js" data-site="${escapeAttr(siteId)}"></script>
    <script defer src="/demo/shop.js"></script>
  </head>
  <body>
    <header><h1>Demo coffee shop</h1><p class="note">Served by <code>svc demo</code> with the browser tag; visitor <code id="vid">…</code></p></header>
    <section class="zone hero" data-svc-zone="hero"><h2>Welcome to the demo shop</h2><p>Fresh coffee, roasted weekly.</p></section>
    <section class="zone banner" data-svc-zone="banner"><p>Free returns within 30 days.</p></section>
    <main>
      <ul class="products">
        ${products}
      </ul>
      <form id="newsletter" class="lead">
        <label>Email <input name="email" type="email" required></label>
        <button type="submit">Get the roasting calendar</button>
        <span id="thanks" hidden>Thanks! svc stored the lead.</span>
      </form>
    </main>
  </body>
</html>
`;
}

const CSS = `body { font: 16px/1.5 system-ui, sans-serif; max-width: 44rem; margin: 2rem auto; padding: 0 1rem; color: #222; }
header h1 { margin-bottom: 0; }
.note { color: #666; font-size: 0.9rem; }
.zone { border-radius: 8px; padding: 1rem 1.25rem; margin: 1rem 0; }
.hero { background: #fdf1e3; min-height: 7rem; }
.banner { background: #e8f3ec; min-height: 3rem; }
.products { list-style: none; padding: 0; }
.products li { display: flex; gap: 1rem; align-items: center; padding: 0.5rem 0; border-bottom: 1px solid #eee; }
.products li span:first-child { flex: 1; }
.lead { margin-top: 1.5rem; display: flex; gap: 0.5rem; align-items: center; flex-wrap: wrap; }
`;

const JS = `(() => {
  const ready = () => {
    const svc = window.svc;
    document.getElementById('vid').textContent = (svc && svc.visitorId()) || '(none yet)';
  };
  addEventListener('svc:ready', ready);
  if (window.svc) ready();
  document.querySelectorAll('button[data-sku]').forEach((b) =>
    b.addEventListener('click', () => window.svc && window.svc.track('add_to_cart', { sku: b.dataset.sku, price: Number(b.dataset.price), qty: 1 })),
  );
  document.getElementById('newsletter').addEventListener('submit', (e) => {
    e.preventDefault();
    if (window.svc) window.svc.lead(e.target);
    document.getElementById('thanks').hidden = false;
  });
})();
`;

/** The pages of `svc demo`: the shop at /demo (under a strict CSP), its stylesheet and script. */
export function demoPages(siteId: string): (pathname: string, req: IncomingMessage, res: ServerResponse) => boolean {
  const page = html(siteId);
  const files: Record<string, { type: string; body: string; csp?: boolean }> = {
    '/demo': { type: 'text/html; charset=utf-8', body: page, csp: true },
    '/demo/': { type: 'text/html; charset=utf-8', body: page, csp: true },
    '/demo/shop.css': { type: 'text/css; charset=utf-8', body: CSS },
    '/demo/shop.js': { type: 'text/javascript; charset=utf-8', body: JS },
  };
  return (pathname, req, res) => {
    const f = files[pathname];
    if (!f || (req.method !== 'GET' && req.method !== 'HEAD')) return false;
    req.resume();
    res.writeHead(200, {
      'Content-Type': f.type,
      'Content-Length': Buffer.byteLength(f.body),
      'Cache-Control': 'no-store',
      ...(f.csp ? { 'Content-Security-Policy': DEMO_CSP } : {}),
    });
    res.end(req.method === 'HEAD' ? undefined : f.body);
    return true;
  };
}
