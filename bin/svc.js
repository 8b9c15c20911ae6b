#!/usr/bin/env node
import { main } from '../dist/bundle/main.js';

main(process.argv).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (err) => {
    process.stderr.write(`svc: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
