/**
 * Identity and the kit's verifier: token verifications per second with the key set read (and how often
 * the key set file was read again while doing them; each verification costs one stat of it), and mint
 * latency p50/p95 over real HTTP.
 */
import { createTokenVerifier } from '../../services/kit/auth.ts';
import { startTestIdentity } from '../../test/support/identity.ts';
import { ms, summarize, time } from '../stats.ts';

const identity = await startTestIdentity();
try {
  const MINTS = 500;
  const mintSamples: number[] = [];
  for (let i = 0; i < 20; i++) await identity.mint(identity.localCredential, 'persona');
  for (let i = 0; i < MINTS; i++)
    mintSamples.push((await time(() => identity.mint(identity.localCredential, 'persona')))[0]);
  const mint = summarize(mintSamples);

  const verifier = createTokenVerifier({
    identityUrl: identity.url,
    audience: 'persona',
    keys: { file: identity.keysFile },
  });
  const header = `Bearer ${await identity.mint(identity.localCredential, 'persona')}`;
  await verifier.verify(header);
  const loadsBefore = verifier.keySetLoads;
  const VERIFY = 20_000;
  const [elapsed] = await time(async () => {
    for (let i = 0; i < VERIFY; i++) await verifier.verify(header);
  });

  console.log('identity / token verifier');
  console.log(
    `  mint over HTTP (${mint.n} calls):           p50 ${ms(mint.p50)}  p95 ${ms(mint.p95)}  p99 ${ms(mint.p99)}`,
  );
  console.log(
    `  verifications, key set read:              ${Math.round(VERIFY / (elapsed / 1000))} per second (${VERIFY} in ${ms(elapsed)})`,
  );
  console.log(
    `  key set loads during those verifications:   ${verifier.keySetLoads - loadsBefore} (total ${verifier.keySetLoads})`,
  );
} finally {
  await identity.close();
}
