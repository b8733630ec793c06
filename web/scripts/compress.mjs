// Writes NAME.gz and NAME.br beside every file of the build's assets/ folder,
// so that hearth can serve them precompressed.
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const out = process.env.HEARTH_WEB_OUT ?? 'dist';
const assets = join(out, 'assets');
let gzTotal = 0;
let jsGz = 0;
for (const name of readdirSync(assets)) {
  if (name.endsWith('.gz') || name.endsWith('.br')) continue;
  const path = join(assets, name);
  if (!statSync(path).isFile()) continue;
  const data = readFileSync(path);
  const gz = gzipSync(data, { level: 9 });
  const br = brotliCompressSync(data, {
    params: {
      [constants.BROTLI_PARAM_QUALITY]: 11,
      [constants.BROTLI_PARAM_SIZE_HINT]: data.length,
    },
  });
  writeFileSync(`${path}.gz`, gz);
  writeFileSync(`${path}.br`, br);
  gzTotal += gz.length;
  if (name.endsWith('.js')) jsGz += gz.length;
  console.log(`${name}: ${data.length} B, gzip ${gz.length} B, brotli ${br.length} B`);
}
console.log(`assets gzip total ${gzTotal} B; JavaScript gzip ${jsGz} B`);
const budget = 200 * 1024;
if (jsGz > budget) {
  console.error(`JavaScript is ${jsGz} B gzipped, over the ${budget} B budget`);
  process.exit(1);
}
