import{chmodSync,existsSync}from'node:fs';const f='dist/src/cli/main.js';if(existsSync(f))chmodSync(f,0o755);
