import { afterAll } from 'vitest';
import { pgFlush } from './backend.js';

// Each file of the PostgreSQL project waits, once at its end, for the schemas its tests dropped while
// they went on (cleanup in svc.ts), so a run leaves none behind for the global teardown to drop one by one.
afterAll(() => pgFlush());
