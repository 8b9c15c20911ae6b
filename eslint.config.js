import tseslint from 'typescript-eslint';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

// ---------------------------------------------------------------------------
// The map of src/ (docs/architecture.md explains it): its parts, what each part
// may import, and the arrows today's code still draws against it. Enforced by
// import-x/no-restricted-paths; test/unit/architecture.test.ts proves it bites.
// ---------------------------------------------------------------------------

/** The parts of src/, bottom to top. */
export const PARTS = {
  errors: ['src/errors'],
  base: ['src/config.ts', 'src/log.ts', 'src/version.ts'],
  store: ['src/store'],
  outbound: ['src/outbound'],
  http: ['src/http'],
  webhooks: ['src/webhooks'],
  adplatforms: ['src/adplatforms'],
  domain: ['src/domain'],
  workers: ['src/workers'],
  ingest: ['src/ingest'],
  pulse: ['src/pulse'],
  mcp: ['src/mcp'],
  plugin: ['src/plugin'],
  metrics: ['src/metrics'],
  demo: ['src/demo'],
  tag: ['src/tag'],
};

const BELOW_DOMAIN = ['errors', 'base', 'store', 'outbound', 'webhooks', 'adplatforms'];
const BELOW_SURFACES = [...BELOW_DOMAIN, 'http', 'domain', 'workers'];

/**
 * What each part may import besides itself. Arrows point down; the surfaces
 * (ingest, pulse, mcp, plugin, metrics, demo) never import each other. The
 * wiring (src/server, src/cli, src/index.ts) may import every part and is not
 * listed. The browser tag (src/tag) is bundled for the browser and imports
 * nothing of the server.
 */
export const MAY_IMPORT = {
  errors: [],
  base: ['errors'],
  store: ['errors', 'base'],
  outbound: ['errors', 'base'],
  http: ['errors', 'base', 'store'],
  webhooks: ['errors', 'base', 'store', 'outbound'],
  adplatforms: ['errors', 'base', 'store', 'outbound', 'webhooks'],
  domain: BELOW_DOMAIN,
  workers: [...BELOW_DOMAIN, 'domain'],
  ingest: BELOW_SURFACES,
  pulse: BELOW_SURFACES,
  mcp: BELOW_SURFACES,
  plugin: BELOW_SURFACES,
  metrics: BELOW_SURFACES,
  demo: BELOW_SURFACES,
  tag: [],
};

/**
 * Adapters (MCP tools, REST handlers, CLI commands) read arguments, call the
 * domain and present its view: of the store they may import only the handle
 * (store.ts; the CLI also opens it, open.ts), never a repository module.
 */
const ADAPTERS = {
  'src/mcp/tools': ['./store.ts'],
  'src/pulse': ['./store.ts'],
  'src/cli': ['./store.ts', './open.ts'],
};

/**
 * Arrows today's code still draws against the map. Each is one importing file
 * and exactly the modules it may still import; every other import of that
 * file is checked like any other. Remove an entry when its file is fixed (the
 * list is in docs/architecture.md too); never add one to let new code in.
 */
export const EXCEPTIONS = [
  // The store imports domain rules.
  { file: 'src/store/rule-sql.ts', imports: ['src/domain/segments/rules.ts'], why: 'the rule AST the SQL compiler compiles lives in the domain' },
  { file: 'src/store/experiments.ts', imports: ['src/domain/experiments/rules.ts', 'src/domain/experiments/stats.ts'], why: 'ArmAggregate/Vital types and p75Rank' },
  { file: 'src/store/profiles.ts', imports: ['src/domain/identity/plan.ts'], why: 'the Owner type' },
  // Parts below the domain reach up.
  // The surfaces import each other.
  { file: 'src/plugin/validate.ts', imports: ['src/mcp/grant.ts', 'src/mcp/policy.ts'], why: 'plugin validate checks the skills against the MCP grant and policy' },
];

/**
 * Adapters never call a repository or open a transaction: lint finds, with the
 * type checker, every member an adapter reads off the store handle (`Store`),
 * a transaction's repositories (`Repos`) or a repository (`…Repo`), whatever
 * the variable is called. Passing the handle on to the domain is what they do
 * instead; `ADAPTER_STORE_MEMBERS` is what they may still touch themselves.
 */
const ADAPTER_STORE_MEMBERS = new Set(['close']);

function storeTypeName(type) {
  const seen = new Set();
  const walk = (t) => {
    if (!t || seen.has(t)) return null;
    seen.add(t);
    if (t.isUnion?.()) {
      for (const u of t.types) {
        const n = walk(u);
        if (n) return n;
      }
      return null;
    }
    const name = t.getSymbol?.()?.getName();
    if (name === 'Store' || name === 'Repos' || (name && /Repo$/.test(name))) return name;
    for (const b of t.getBaseTypes?.() ?? []) {
      const n = walk(b);
      if (n) return n;
    }
    return null;
  };
  return walk(type);
}

const adapterRules = {
  rules: {
    'no-store-calls': {
      meta: {
        type: 'problem',
        schema: [],
        messages: { store: 'an adapter calls the domain, never the store: `.{{member}}` of a {{type}} (move it into a domain service; docs/architecture.md)' },
      },
      create(context) {
        const services = context.sourceCode.parserServices;
        if (!services?.program) return {};
        return {
          MemberExpression(node) {
            const member = node.property.type === 'Identifier' ? node.property.name : null;
            if (member !== null && ADAPTER_STORE_MEMBERS.has(member)) return;
            const type = storeTypeName(services.getTypeAtLocation(node.object));
            // `store.sites.get`: reported once, at `.sites`.
            if (type && type !== 'Store' && type !== 'Repos' && node.object.type === 'MemberExpression') return;
            if (type) context.report({ node, messageId: 'store', data: { member: member ?? '[…]', type } });
          },
        };
      },
    },
  },
};

/** One zone per (importing part, forbidden part) pair, so a zone's exceptions resolve against one folder. */
function zones() {
  const out = [];
  for (const [part, targets] of Object.entries(PARTS)) {
    for (const [other, froms] of Object.entries(PARTS)) {
      if (other === part || MAY_IMPORT[part].includes(other)) continue;
      for (const from of froms) out.push({ target: targets, from, except: [], message: `src/${part === 'base' ? '(config|log|version).ts' : part} may not import ${from} (docs/architecture.md)` });
    }
  }
  for (const [target, allowed] of Object.entries(ADAPTERS)) {
    out.push({ target, from: 'src/store', except: [...allowed], message: `an adapter (${target}) calls the domain, never a repository: import only the store handle (docs/architecture.md)` });
  }
  return out;
}

/** The zones with one file's exceptions added to every zone whose `from` holds them. */
function zonesFor(exception) {
  return zones().map((z) => {
    const extra = exception.imports.filter((i) => i.startsWith(`${z.from}/`)).map((i) => `./${i.slice(z.from.length + 1)}`);
    return extra.length ? { ...z, except: [...z.except, ...extra] } : z;
  });
}

const ARCHITECTURE = [
  {
    files: ['src/**/*.ts'],
    rules: { 'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: zones() }] },
  },
  ...EXCEPTIONS.map((e) => ({
    files: [e.file],
    rules: { 'import-x/no-restricted-paths': ['error', { basePath: import.meta.dirname, zones: zonesFor(e) }] },
  })),
  {
    files: Object.keys(ADAPTERS).map((dir) => `${dir}/**/*.ts`),
    plugins: { adapters: adapterRules },
    rules: { 'adapters/no-store-calls': 'error' },
  },
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'coverage/**', '.svc/**', 'test/bench/generated/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['*.js', 'bin/*.js'] }, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver()],
      'import-x/extensions': ['.ts', '.tsx', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': ['error', { maxDepth: 10 }],
      // The store is asynchronous (SQLite and PostgreSQL behind one interface): a promise used as a
      // value or dropped is a missing await.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/await-thenable': 'error',
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^(fs|path|http|https|crypto|net|dns|os|url|child_process|stream|util|events|zlib|readline|tty)$', message: 'use the node: prefix' }] },
      ],
    },
  },
  ...ARCHITECTURE,
  {
    // Tests read JSON bodies of many shapes; asserting on them is the point, typing each is not.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
);
