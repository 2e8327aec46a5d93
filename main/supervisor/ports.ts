import { readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { basename } from 'node:path';
import type { PortTaken } from '../../common/contract.ts';
import { SERVICE_CATALOGUE, SERVICES, type ServiceName } from '../../common/services.ts';

async function getJson(url: string): Promise<unknown> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(1_000) });
    if (!res.ok) return undefined;
    return await res.json();
  } catch {
    return undefined;
  }
}

/**
 * Asks whatever holds a port whether it is one of our services: by the title of its /openapi.json,
 * by the provider's /v1/models list, or by a /healthy that answers like ours. Never touches the holder otherwise.
 */
export async function identifyHolder(baseUrl: string): Promise<{ service?: ServiceName; oursLike: boolean }> {
  const openapi = (await getJson(`${baseUrl}/openapi.json`)) as { info?: { title?: unknown } } | undefined;
  const title = typeof openapi?.info?.title === 'string' ? openapi.info.title : undefined;
  if (title) {
    // Our services' documents are titled with the catalogue's title or label ("Repository-hosting gateway").
    const hit = SERVICES.find((s) =>
      [s.title, s.label].some((word) => title.toLowerCase().includes(word.toLowerCase())),
    );
    if (hit) return { service: hit.name, oursLike: true };
  }
  const healthy = (await getJson(`${baseUrl}/healthy`)) as { status?: unknown } | undefined;
  if (healthy?.status !== 'ok') return { oursLike: false };
  const models = (await getJson(`${baseUrl}/v1/models`)) as { object?: unknown } | undefined;
  if (models?.object === 'list') return { service: 'model-provider', oursLike: true };
  return { oursLike: true };
}

/**
 * The process listening on a TCP port, from /proc (Linux only; only processes we may inspect, so
 * usually those of the same user). Undefined when it cannot be told.
 */
export function portHolder(port: number): { pid: number; command: string } | undefined {
  if (process.platform !== 'linux') return undefined;
  try {
    const inodes = new Set<string>();
    for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
      let text = '';
      try {
        text = readFileSync(table, 'utf8');
      } catch {
        continue;
      }
      for (const row of text.split('\n').slice(1)) {
        const cols = row.trim().split(/\s+/);
        const local = cols[1];
        if (!local || cols[3] !== '0A') continue; // 0A = LISTEN
        if (parseInt(local.split(':')[1] ?? '', 16) === port && cols[9]) inodes.add(cols[9]);
      }
    }
    if (inodes.size === 0) return undefined;
    for (const entry of readdirSync('/proc')) {
      if (!/^\d+$/.test(entry)) continue;
      let fds: string[];
      try {
        fds = readdirSync(`/proc/${entry}/fd`);
      } catch {
        continue;
      }
      for (const fd of fds) {
        let target = '';
        try {
          target = readlinkSync(`/proc/${entry}/fd/${fd}`);
        } catch {
          continue;
        }
        const m = /^socket:\[(\d+)\]$/.exec(target);
        if (m && inodes.has(m[1]!)) {
          return { pid: Number(entry), command: programName(entry) };
        }
      }
    }
  } catch {
    /* fall through: unknown holder */
  }
  return undefined;
}

/** The program a process runs: its executable's name (Node 24 names its main thread, and so `comm`, "MainThread"). */
function programName(pid: string): string {
  try {
    return basename(readlinkSync(`/proc/${pid}/exe`));
  } catch {
    return readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
  }
}

/** How a sentence names a service: "the persona store". */
export function serviceLabel(name: ServiceName): string {
  return `the ${SERVICE_CATALOGUE[name].label}`;
}

/** Who holds a port another program took before this app could (where the system tells), and the sentence for the service's status. */
export async function describeBusyPort(
  name: ServiceName,
  host: string,
  port: number,
  /** The services started with this one that trust it (and so are not started either). */
  dependants: readonly ServiceName[] = [],
): Promise<{ message: string; taken: PortTaken }> {
  const hostPart = host.includes(':') ? `[${host}]` : host;
  const holder = await identifyHolder(`http://${hostPart}:${port}`);
  const proc = portHolder(port);
  const taken: PortTaken = {
    service: name,
    host,
    port,
    ...(proc ? { pid: proc.pid, program: proc.command } : {}),
    ...(holder.service ? { answersAs: holder.service } : {}),
  };
  const pid = proc ? ` (process ${proc.pid}, ${proc.command})` : '';
  const who = holder.service
    ? `another copy of ${serviceLabel(holder.service)} (it answers like one; perhaps a second app or \`npm run serve\` is running)`
    : holder.oursLike
      ? 'a program that answers like one of these services'
      : 'a program that is not one of these services';
  const message =
    `Port ${port} on ${host} is already in use by ${who}${pid}, so ${serviceLabel(name)} was not started` +
    (dependants.length ? `, nor ${dependants.map(serviceLabel).join(' nor ')}, which trust it` : '') +
    `. Stop that program, or set ${SERVICE_CATALOGUE[name].prefix}PORT to a free port, then start ${serviceLabel(name)}. Nothing was killed.`;
  return { message, taken };
}

/** The sentence of a service not started because a service it trusts could not have its own port. */
export function heldBackMessage(name: ServiceName, taken: PortTaken): string {
  const owner = serviceLabel(taken.service);
  return (
    `${capitalised(serviceLabel(name))} was not started: it trusts ${owner}, whose port ${taken.port} on ${taken.host} is held by another program, not by this app. ` +
    `Free that port (see ${owner}), then start ${owner}; ${serviceLabel(name)} starts with it.`
  );
}

/** A sentence's first word from a label: "The persona store". */
export function capitalised(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}
