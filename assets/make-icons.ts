/**
 * Draws the tray and app icons as PNG files (no image tools needed): `npx tsx assets/make-icons.ts`.
 * Tray: a dot in the colour of the aggregate state, 16 px and 32 px (@2x). App: 512 px.
 */
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { deflateSync } from 'node:zlib';

type Rgba = [number, number, number, number];

const CRC_TABLE = Array.from({ length: 256 }, (_, n) => {
  let c = n;
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
  return c >>> 0;
});

function crc32(buf: Buffer): number {
  let c = 0xffffffff;
  for (const b of buf) c = CRC_TABLE[(c ^ b) & 0xff]! ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

function chunk(type: string, data: Buffer): Buffer {
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const body = Buffer.concat([Buffer.from(type, 'ascii'), data]);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** An RGBA PNG from a pixel function. */
export function encodePng(size: number, pixel: (x: number, y: number) => Rgba): Buffer {
  const raw = Buffer.alloc(size * (size * 4 + 1));
  for (let y = 0; y < size; y++) {
    raw[y * (size * 4 + 1)] = 0; // filter: none
    for (let x = 0; x < size; x++) {
      const [r, g, b, a] = pixel(x, y);
      raw.set([r, g, b, a], y * (size * 4 + 1) + 1 + x * 4);
    }
  }
  const header = Buffer.alloc(13);
  header.writeUInt32BE(size, 0);
  header.writeUInt32BE(size, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA
  return Buffer.concat([
    Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]),
    chunk('IHDR', header),
    chunk('IDAT', deflateSync(raw)),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** Coverage of a pixel by a disc, sampled 4x4 for smooth edges. */
function disc(x: number, y: number, cx: number, cy: number, r: number): number {
  let hit = 0;
  for (let i = 0; i < 4; i++)
    for (let j = 0; j < 4; j++) if ((x + (i + 0.5) / 4 - cx) ** 2 + (y + (j + 0.5) / 4 - cy) ** 2 <= r * r) hit++;
  return hit / 16;
}

export const STATE_COLOURS = {
  ready: [46, 160, 67],
  starting: [210, 153, 34],
  // Blue: not a fault and not a matter of time; the app waits for the person.
  waiting: [9, 105, 218],
  degraded: [219, 109, 40],
  error: [207, 34, 46],
  stopped: [130, 138, 145],
} as const satisfies Record<string, readonly [number, number, number]>;

function trayIcon(size: number, [r, g, b]: readonly [number, number, number]): Buffer {
  const c = size / 2;
  return encodePng(size, (x, y) => {
    const ring = disc(x, y, c, c, size * 0.45);
    const fill = disc(x, y, c, c, size * 0.36);
    // A dark ring keeps the dot visible on light and dark panels alike.
    const mix = (v: number) => Math.round(v * fill + 30 * (1 - fill));
    return [mix(r), mix(g), mix(b), Math.round(255 * ring)];
  });
}

function appIcon(size: number): Buffer {
  const c = size / 2;
  const dots: Array<[number, number]> = [0, 1, 2, 3].map((k) => [
    c + Math.cos((k * Math.PI) / 2 + Math.PI / 4) * size * 0.24,
    c + Math.sin((k * Math.PI) / 2 + Math.PI / 4) * size * 0.24,
  ]);
  return encodePng(size, (x, y) => {
    const half = size * 0.44;
    const corner = size * 0.12;
    const dx = Math.max(Math.abs(x + 0.5 - c) - (half - corner), 0);
    const dy = Math.max(Math.abs(y + 0.5 - c) - (half - corner), 0);
    const inside = Math.min(1, Math.max(0, corner - Math.hypot(dx, dy) + 0.5));
    const hub = disc(x, y, c, c, size * 0.11);
    const spokes = Math.max(...dots.map(([dx, dy]) => disc(x, y, dx, dy, size * 0.08)));
    const white = Math.max(hub, spokes);
    const base: Rgba = [36, 41, 47, Math.round(255 * inside)];
    return [
      Math.round(base[0] + (240 - base[0]) * white),
      Math.round(base[1] + (246 - base[1]) * white),
      Math.round(base[2] + (252 - base[2]) * white),
      base[3],
    ];
  });
}

const HERE = dirname(fileURLToPath(import.meta.url));
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  for (const [state, colour] of Object.entries(STATE_COLOURS)) {
    writeFileSync(join(HERE, `tray-${state}.png`), trayIcon(16, colour));
    writeFileSync(join(HERE, `tray-${state}@2x.png`), trayIcon(32, colour));
  }
  writeFileSync(join(HERE, 'icon.png'), appIcon(512));
  process.stdout.write(`Icons written to ${HERE}\n`);
}
