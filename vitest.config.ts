import { defineConfig } from 'vitest/config';

/**
 * The suite runs on the embedded SQLite store always (projects sqlite and unit:
 * the unit tests apart, in shared worker processes), and a second time on
 * PostgreSQL when SVC_TEST_DATABASE_URL is set (.ci/run sets it; projects pg and
 * pg-unit): every test that stores data then gets a schema of its own
 * (test/helpers/backend.ts).
 */
const pgUrl = process.env.SVC_TEST_DATABASE_URL;

const shared = { testTimeout: 60_000, hookTimeout: 60_000 };

/** Unit test files that need a process of their own (they mock a module: vi.mock), run with the integration tests. */
const OWN_PROCESS = ['test/unit/writer-ack.test.ts'];

/**
 * Integration files that mean one store only, left out of the other project instead of starting a process there
 * only to skip (those that need one store also say so with describe.skipIf/runIf, for a run of one file by hand).
 * SQLite only: the embedded store's own commands (backup, a missing data directory, its facts statements), the npm
 * package, and files that touch no store (`svc verify` hashes bytes; the data directory key is a file on both).
 */
const SQLITE_ONLY = [
  'test/integration/backup.test.ts',
  'test/integration/cli-missing-data.test.ts',
  'test/integration/profile-facts-sqlite.test.ts',
  'test/integration/package.test.ts',
  'test/integration/verify-cli.test.ts',
  'test/integration/secret-key.test.ts',
];
/** PostgreSQL only: several instances on one database, and the database going away. */
const PG_ONLY = ['test/integration/multi-instance.test.ts', 'test/integration/db-outage.test.ts'];

export default defineConfig({
  test: {
    pool: 'forks',
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        test: {
          ...shared,
          name: 'sqlite',
          include: ['test/integration/**/*.test.ts', ...OWN_PROCESS],
          exclude: PG_ONLY,
          env: { SVC_TEST_BACKEND: 'sqlite' },
        },
      },
      {
        // The unit tests share their worker processes: a file then costs its tests and its imports, not a new
        // process with vitest and the dependencies loaded again (~0.3-0.5 s of CPU a file, 80 files). The
        // modules of src/ are not evaluated again from one file to the next, so a file that mocks a module
        // (vi.mock) keeps a process of its own, in the project above (OWN_PROCESS).
        test: {
          ...shared,
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          exclude: OWN_PROCESS,
          isolate: false,
          env: { SVC_TEST_BACKEND: 'sqlite' },
        },
      },
      ...(pgUrl
        ? [
            {
              test: {
                ...shared,
                name: 'pg',
                include: ['test/integration/**/*.test.ts'],
                exclude: SQLITE_ONLY,
                env: { SVC_TEST_BACKEND: 'pg' },
                globalSetup: ['test/helpers/pg-global.ts'],
                setupFiles: ['test/helpers/pg-setup.ts'],
              },
            },
            {
              // Unit tests of pure code run once; those that store data run again on PostgreSQL, in shared
              // worker processes like the project unit (the set-up file still runs for each file).
              test: {
                ...shared,
                name: 'pg-unit',
                include: ['test/unit/segment-rules*.test.ts', 'test/unit/store-*.test.ts'],
                exclude: OWN_PROCESS,
                isolate: false,
                env: { SVC_TEST_BACKEND: 'pg' },
                globalSetup: ['test/helpers/pg-global.ts'],
                setupFiles: ['test/helpers/pg-setup.ts'],
              },
            },
          ]
        : []),
    ],
  },
});
