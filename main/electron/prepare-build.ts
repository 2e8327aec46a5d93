/**
 * Before building installers: the console build into out/renderer and each service's bundle into
 * out/services, since the installed app cannot write inside its own archive.
 * `npx tsx main/electron/prepare-build.ts`
 */
import { buildRenderer } from '../../renderer/build.ts';
import { BUNDLE_DIR, bundleServices } from '../supervisor/service-bundles.ts';
import { SERVICE_NAMES } from '../supervisor/types.ts';
import { PREBUILT_RENDERER } from './renderer-protocol.ts';

await buildRenderer({ outDir: PREBUILT_RENDERER });
process.stdout.write(`Console build written to ${PREBUILT_RENDERER}\n`);
const services = await bundleServices(SERVICE_NAMES);
if (services.error || services.bundled.length !== SERVICE_NAMES.length) {
  process.stderr.write(`Service bundles incomplete (${services.error ?? `only ${services.bundled.join(', ')}`}); fix that before building installers.\n`);
  process.exit(1);
}
process.stdout.write(`Service bundles written to ${BUNDLE_DIR}\n`);
