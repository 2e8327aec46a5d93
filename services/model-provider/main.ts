import { setFlagsFromString } from 'node:v8';
import { runUntilSignalled } from '../kit/server.ts';
import { startModelProvider } from './service.ts';

// The service's own JavaScript is glue around CLI runs that take seconds: each function runs once or
// twice per completion, a few times a second at most. V8's optimizing compiler kept compiling (and
// dropping) that glue through thousands of completions, on the provider's main and helper threads, and
// spent more CPU than the optimized code saved: 0.3 to 0.5 ms per completion (README, "Benchmark").
// Sparkplug's baseline code stays on; JSON, hashing and the HTTP parser are native either way.
// Streaming text as it comes is the exception: every delta runs Node's stream and HTTP code on the path
// to the client, which optimized code runs in half the instructions (bench/model-provider/README.md).
if (process.env.MODELPROV_STREAM !== 'deltas') setFlagsFromString('--no-opt');

await runUntilSignalled('model-provider', () => startModelProvider(process.env));
