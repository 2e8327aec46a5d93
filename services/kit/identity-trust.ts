import { dirname, join, resolve } from 'node:path';
import {
  appDataDir,
  ConfigError,
  identityUrlSetting,
  isLoopbackHost,
  parse,
  setting,
  type ServiceEntry,
} from './config.ts';
import { MAX_SOCKET_PATH_BYTES, overHttps, overSocket, type IdentityChannel } from './identity-channel.ts';
import { THUMBPRINT, type IdentityKeys } from './identity-keys.ts';

/**
 * What identity keeps in its data folder for the services that trust it, by file name (the catalogue's
 * names, passed in: the kit imports no catalogue), and identity's own entry (its name and port).
 */
export interface IdentityPlaces {
  identity: Pick<ServiceEntry, 'name' | 'port'>;
  /** The public key set identity writes (a JWK set). */
  keysFile: string;
  /** The socket identity listens on (on Windows: the file naming its pipe). */
  socket: string;
}

/** How a service that takes identity's tokens trusts identity: the keys it checks them with, and the one way it calls it. */
export interface IdentityTrust {
  readonly keys: IdentityKeys;
  readonly channel: IdentityChannel;
}

/**
 * The settings of a service that takes identity's tokens: identity's URL (the tokens' iss), and where
 * its keys and its socket are. Which applies when is `trustIdentity`'s, and docs/configuration.md's.
 */
export function identityTrustSettings(identity: Pick<ServiceEntry, 'port'>, urlDescription: string) {
  return {
    identityUrl: identityUrlSetting(identity.port, urlDescription),
    identityKeysFile: setting(
      'IDENTITY_KEYS_FILE',
      parse.text(),
      undefined,
      'The identity service\u2019s public keys (a JWK set) as it writes them into its data folder (public-keys.json); tokens are checked against these keys only. Default: that file in the identity service\u2019s default data folder, when IDENTITY_URL is on this machine.',
    ),
    identityKeyThumbprints: setting(
      'IDENTITY_KEY_THUMBPRINTS',
      parse
        .list()
        .refine((list) => list.length > 0, 'name at least one thumbprint')
        .refine(
          (list) => list.every((t) => THUMBPRINT.test(t)),
          'must be comma-separated SHA-256 JWK thumbprints (RFC 7638), 43 base64url characters each',
        ),
      undefined,
      'For an identity service elsewhere: the SHA-256 thumbprints (RFC 7638) of the keys it signs with; its published key set is fetched and only these keys are used. Instead of IDENTITY_KEYS_FILE.',
    ),
    identitySocket: setting(
      'IDENTITY_SOCKET',
      parse.text(),
      undefined,
      'The identity service\u2019s socket in its data folder (identity.sock; on Windows the file there that names its pipe): every call that carries a secret or whose answer is trusted goes there. Default: beside the keys file, when IDENTITY_URL is on this machine; an https:// IDENTITY_URL needs none.',
    ),
  };
}

export interface IdentityTrustValues {
  identityUrl: string;
  identityKeysFile?: string;
  identityKeyThumbprints?: readonly string[];
  identitySocket?: string;
}

/**
 * Decides, at start, where this service gets identity's keys and how it calls identity, or stops with a
 * configuration error naming the settings when nothing would prove who it is talking to:
 *
 * - keys: IDENTITY_KEYS_FILE; else the pinned IDENTITY_KEY_THUMBPRINTS; else, for an identity on this
 *   machine, the file in identity's default data folder (what `npm run service -- identity` writes).
 * - calls: IDENTITY_SOCKET; else an https:// IDENTITY_URL (its certificate proves it); else, on this
 *   machine, the socket beside the keys file. Plain http elsewhere is refused.
 */
export function trustIdentity(prefix: string, values: IdentityTrustValues, places: IdentityPlaces): IdentityTrust {
  const url = values.identityUrl;
  const parsed = new URL(url);
  const onThisMachine = isLoopbackHost(parsed.hostname);
  const defaultFolder = join(appDataDir(), places.identity.name);
  if (values.identityKeysFile !== undefined && values.identityKeyThumbprints !== undefined) {
    throw new ConfigError(
      `Set one of ${prefix}IDENTITY_KEYS_FILE and ${prefix}IDENTITY_KEY_THUMBPRINTS, not both: the keys come from the file, or from the identity service's published set filtered by the thumbprints.`,
    );
  }
  let keys: IdentityKeys;
  let keysFile: string | undefined;
  if (values.identityKeyThumbprints !== undefined) {
    keys = { jwksUrl: `${url}/.well-known/jwks.json`, thumbprints: values.identityKeyThumbprints };
  } else if (values.identityKeysFile !== undefined || onThisMachine) {
    keysFile = resolve(values.identityKeysFile ?? join(defaultFolder, places.keysFile));
    keys = { file: keysFile };
  } else {
    throw new ConfigError(
      `${prefix}IDENTITY_URL names an identity service elsewhere (${url}), and this service never takes keys from whatever answers there. ` +
        `Say which keys it signs with: ${prefix}IDENTITY_KEY_THUMBPRINTS (their SHA-256 thumbprints; \`npm run identity -- keys list\` prints them where it runs) or ${prefix}IDENTITY_KEYS_FILE (its public key set, kept on this machine).`,
    );
  }
  let channel: IdentityChannel;
  if (values.identitySocket !== undefined) {
    channel = socketChannel(prefix, url, resolve(values.identitySocket));
  } else if (parsed.protocol === 'https:') {
    channel = overHttps(url);
  } else if (onThisMachine) {
    channel = socketChannel(prefix, url, join(keysFile ? dirname(keysFile) : defaultFolder, places.socket));
  } else {
    throw new ConfigError(
      `${prefix}IDENTITY_URL is plain http to another machine (${url}): nothing proves who answers there, and this service sends it tokens and its own secrets. ` +
        `Use an https:// URL, or set ${prefix}IDENTITY_SOCKET to the identity service's socket.`,
    );
  }
  return { keys, channel };
}

function socketChannel(prefix: string, url: string, path: string): IdentityChannel {
  if (process.platform !== 'win32' && Buffer.byteLength(path) > MAX_SOCKET_PATH_BYTES) {
    throw new ConfigError(
      `The identity service's socket ${path} is ${Buffer.byteLength(path)} bytes long; the system takes at most ${MAX_SOCKET_PATH_BYTES}. ` +
        `Give identity a shorter data folder (IDENTITY_DATA_DIR, or --data-dir) and ${prefix}IDENTITY_SOCKET with it.`,
    );
  }
  return overSocket(url, path);
}
