// Removes the build output directories named on the command line, so a build never ships stale files.
import { rmSync } from 'node:fs';

for (const dir of process.argv.slice(2)) rmSync(dir, { recursive: true, force: true });
