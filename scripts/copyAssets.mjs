// Part of `npm run build`: the files the compiled service reads at runtime, next to the compiled
// code at the same relative paths as in the source tree (dist/src/... and dist/docs/...).
import fs from 'node:fs';

const ASSETS = [
  ['src/http/dashboard/assets', 'dist/src/http/dashboard/assets'],
  ['docs/api-reference.md', 'dist/docs/api-reference.md'],
];

for (const [from, to] of ASSETS) fs.cpSync(from, to, { recursive: true });
