// Lets plain `node` run the TypeScript benchmarks and their child processes:
//   node --import ./test/bench/register.mjs test/bench/ingest.ts
import { register } from 'tsx/esm/api';

register();
