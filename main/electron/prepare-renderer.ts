/** Writes the console build to out/renderer for the installers: `npx tsx main/electron/prepare-renderer.ts`. */
import { buildRenderer } from '../../renderer/build.ts';
import { PREBUILT_RENDERER } from './renderer-protocol.ts';

await buildRenderer({ outDir: PREBUILT_RENDERER });
process.stdout.write(`Console build written to ${PREBUILT_RENDERER}\n`);
