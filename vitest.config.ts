import { defineConfig } from 'vitest/config';

/**
 * The suite runs on the embedded SQLite store always, and a second time on
 * PostgreSQL when SVC_TEST_DATABASE_URL is set (.ci/run sets it): every test
 * that stores data then gets a schema of its own (test/helpers/backend.ts).
 */
const pgUrl = process.env.SVC_TEST_DATABASE_URL;

const shared = { testTimeout: 60_000, hookTimeout: 60_000 };

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
          include: ['test/unit/**/*.test.ts', 'test/integration/**/*.test.ts'],
          env: { SVC_TEST_BACKEND: 'sqlite' },
        },
      },
      ...(pgUrl
        ? [
            {
              test: {
                ...shared,
                name: 'pg',
                // Unit tests of pure code run once; everything that stores data runs again on PostgreSQL.
                include: ['test/integration/**/*.test.ts', 'test/unit/segment-rules*.test.ts', 'test/unit/store-*.test.ts'],
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
