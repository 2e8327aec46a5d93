/**
 * Where a signal may go. Both the allowed prefixes (REPOHOST_SIGNAL_URL_PREFIXES) and each signal_url
 * are parsed as WHATWG URLs — the parser `fetch` itself uses — and compared part by part: scheme, host
 * (as the parser normalises it: `0x7f.1`, `2130706433` and `127.1` are all 127.0.0.1), port (explicit
 * or the scheme's default) and path at a segment boundary. Comparing strings let
 * `http://127.0.0.1:@evil.example/` through, which is user-info in front of another host.
 */

export interface SignalPrefix {
  /** The prefix as configured, for messages. */
  text: string;
  protocol: 'http:' | 'https:';
  /** As the URL parser normalises it: lowercase, IPv4 in dotted decimal, IPv6 in brackets, compressed. */
  hostname: string;
  /** undefined: any port (written `host:*`). */
  port: number | undefined;
  /** The path every address must be at or under, at a segment boundary ("/" admits every path). */
  path: string;
}

const defaultPort = (protocol: string) => (protocol === 'https:' ? 443 : 80);

/** Parses one configured prefix, or says what is wrong with it. */
export function parseSignalPrefix(text: string): SignalPrefix | string {
  const anyPort = /^(https?:\/\/[^/?#@]+):\*(?=$|\/)/i.exec(text);
  let url: URL;
  try {
    url = new URL(anyPort ? text.replace(':*', '') : text);
  } catch {
    return `"${text}" is not a URL such as http://127.0.0.1:* or https://hooks.example.com/hub`;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return `"${text}" is not an http or https address`;
  // No user information without an "@", no query or fragment without a "?" or "#": the text tells, even an empty one.
  if (!/^https?:\/\//i.test(text) || text.includes('@'))
    return `"${text}" must be scheme://host[:port][/path], without user information`;
  if (/[?#]/.test(text)) return `"${text}" must not have a query or a fragment`;
  return {
    text,
    protocol: url.protocol as SignalPrefix['protocol'],
    hostname: url.hostname,
    port: anyPort ? undefined : Number(url.port || defaultPort(url.protocol)),
    path: url.pathname,
  };
}

function under(path: string, prefix: string): boolean {
  // A prefix "/" admits every path: each starts with it.
  if (path === prefix) return true;
  return path.startsWith(prefix.endsWith('/') ? prefix : `${prefix}/`);
}

/** The checks every signal_url passes, at opening and again before each delivery. */
export class SignalAddresses {
  readonly refusedPorts: Set<number>;

  constructor(
    readonly prefixes: SignalPrefix[],
    refusedPorts: Iterable<number>,
  ) {
    this.refusedPorts = new Set(refusedPorts);
  }

  /** Why `raw` may not receive signals, in words that say what to change; undefined when it may. */
  refusal(raw: string): string | undefined {
    if (![...raw].every((c) => c > ' ' && c <= '~') || raw.includes('\\')) {
      return 'signal_url must be printable ASCII, without spaces or backslashes';
    }
    if (!/^https?:\/\//i.test(raw)) return 'signal_url must start with http:// or https://';
    let url: URL;
    try {
      url = new URL(raw);
    } catch {
      return 'signal_url must be an absolute http or https URL';
    }
    // Both: the parser skips extra slashes (`http:///user@host`), so the authority as split here may be empty.
    const authority = raw.slice(raw.indexOf('//') + 2).split(/[/?#]/)[0]!;
    if (url.username || url.password || authority.includes('@')) {
      return 'signal_url must not carry user information ("user:password@" before the host); send the address of the receiver itself';
    }
    if (raw.includes('#')) return 'signal_url must not carry a fragment ("#..."); it is never sent to the receiver';
    // A receiver that decodes these in its path could route the signal elsewhere than the prefix says.
    if (/%(2e|2f|5c)/i.test(url.pathname))
      return 'signal_url\u2019s path must not encode ".", "/" or "\\" (%2E, %2F, %5C)';
    const port = Number(url.port || defaultPort(url.protocol));
    if (port === 0) return 'signal_url needs a port from 1 to 65535';
    // On any host: the services may listen on an address other than loopback, and a name may resolve to this machine.
    if (this.refusedPorts.has(port)) {
      return `signal_url\u2019s port ${port} is one of this app\u2019s own services (REPOHOST_SIGNAL_REFUSED_PORTS); point it at the hub\u2019s receiver`;
    }
    const admitted = this.prefixes.some(
      (p) =>
        p.protocol === url.protocol &&
        p.hostname === url.hostname &&
        (p.port === undefined || p.port === port) &&
        under(url.pathname, p.path),
    );
    if (!admitted) {
      return `signal_url is not under an allowed prefix; use an address under one of ${this.prefixes.map((p) => p.text).join(', ')}, or add its prefix to REPOHOST_SIGNAL_URL_PREFIXES`;
    }
    return undefined;
  }
}
