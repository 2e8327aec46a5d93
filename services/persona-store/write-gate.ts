import type { ScreenContext } from '../kit/api.ts';
import { problem, type Problem } from '../kit/problem.ts';
import {
  fastShape,
  refuseCredentials,
  SECRET_MEMBER,
  worthSecretlint,
  type WrittenString,
} from './credential-screen.ts';

/**
 * What every write passes before its route validates anything (the write routes' screen), in one walk
 * over the whole request: the body's nesting is bounded, every string is well-formed text, every number
 * is one JSON can keep, and nothing in it is a credential. No walk over request input here recurses, so no input can
 * overflow the stack; everything after the gate walks values at most MAX_DEPTH deep.
 */

/** Deepest nesting of arrays and objects inside one member of a body: a field value `[[1]]` nests 2. */
export const MAX_DEPTH = 64;

/** Where a string or value sits, as a chain of steps up to the body; the text of the location is built only when a refusal names it. */
interface Place {
  parent: Place | undefined;
  step: string;
}

function locationOf(place: Place): string {
  const steps: string[] = [];
  for (let p: Place | undefined = place; p; p = p.parent) steps.push(p.step);
  return steps.reverse().join('');
}

/** A member name as part of a location, unless it could itself be the secret. */
const memberInLocation = (k: string) =>
  k.length <= 32 && /^[\w-]+$/.test(k) && !fastShape(k) && !worthSecretlint(k) ? k : '(member)';

/** Half of a UTF-16 surrogate pair on its own: JSON can carry it (`"\ud800"`), but it is not text and SQLite would store U+FFFD instead. */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Walks a parsed JSON body with a stack of its own (never recursion): appends every string, member
 * names included, in document order with its location, to `strings`; refuses a body nested deeper
 * than MAX_DEPTH at once (422 naming the body's member and the limit), before anything else reads
 * it. Returns the refusal for anything else no route may store (a lone surrogate, a number JSON cannot
 * keep), for the caller to throw once credentials have been looked for.
 */
export function readBody(body: unknown, strings: WrittenString[] = [], root = 'body'): Problem | undefined {
  let refusal: Problem | undefined;
  const rootPlace: Place = { parent: undefined, step: root };
  // Tasks in reverse order of visit: a member name, then its value, then the next member.
  const stack: ({ name: string; place: Place } | { value: unknown; place: Place; depth: number; top: Place })[] = [
    { value: body, place: rootPlace, depth: 0, top: rootPlace },
  ];
  while (stack.length > 0) {
    const task = stack.pop()!;
    if ('name' in task) {
      strings.push({ where: () => `${locationOf(task.place)} (a member name)`, text: task.name });
      if (!refusal && LONE_SURROGATE.test(task.name))
        refusal = loneSurrogate(`${locationOf(task.place)} (a member name)`);
      continue;
    }
    const { value, place, depth, top } = task;
    if (typeof value === 'string') {
      strings.push({ where: () => locationOf(place), text: value });
      if (!refusal && LONE_SURROGATE.test(value)) refusal = loneSurrogate(locationOf(place));
    } else if (typeof value === 'number') {
      if (!refusal && !Number.isFinite(value)) {
        refusal = problem.unprocessable(
          `${locationOf(place)} is a number too large to keep: JSON numbers are kept as 64-bit floating point (at most about 1.8e308); send it as a string.`,
          { member: locationOf(place) },
        );
      } else if (!refusal && Math.abs(value) > Number.MAX_SAFE_INTEGER) {
        // Past 2^53 a float holds only some integers: 9007199254740993 would come back as ...992, an id silently changed.
        refusal = problem.unprocessable(
          `${locationOf(place)} is a number of 2^53 (9,007,199,254,740,992) or more, which JSON numbers kept as 64-bit floating point cannot hold digit for digit; send it as a string.`,
          { member: locationOf(place) },
        );
      }
    } else if (value !== null && typeof value === 'object') {
      if (depth > MAX_DEPTH) {
        throw problem.unprocessable(
          `${locationOf(top)} nests arrays and objects more than ${MAX_DEPTH} levels deep (the limit); store flatter data, for example several fields.`,
          { member: locationOf(top), max_depth: MAX_DEPTH },
        );
      }
      const children: (typeof stack)[number][] = [];
      if (Array.isArray(value)) {
        value.forEach((item, i) => {
          const at = { parent: place, step: `[${i}]` };
          children.push({ value: item, place: at, depth: depth + 1, top: depth === 0 ? at : top });
        });
      } else {
        for (const [k, inner] of Object.entries(value)) {
          const at = { parent: place, step: `.${memberInLocation(k)}` };
          children.push({ name: k, place }, { value: inner, place: at, depth: depth + 1, top: depth === 0 ? at : top });
          // `{"password": "..."}` is an assignment split in two: checked whole, as the text `password: "..."` would be.
          if (typeof inner === 'string' && SECRET_MEMBER.test(k))
            strings.push({ where: () => locationOf(at), text: `${k}: "${inner}"` });
        }
      }
      for (let i = children.length - 1; i >= 0; i--) stack.push(children[i]!);
    }
  }
  return refusal;
}

const loneSurrogate = (where: string) =>
  problem.unprocessable(
    `${where} holds a lone surrogate (half of a UTF-16 surrogate pair, such as \\ud800), which is not text and cannot be stored as sent; send well-formed Unicode.`,
    { member: where },
  );

/**
 * The screen of every write route (the kit's route screen: run once the caller is verified, before the
 * body's nesting check and the route's validation), in one pass over the whole request: the body's depth
 * (422 over MAX_DEPTH), then credentials in every string of the JSON body (member names too, members the
 * route does not know included), every named path parameter as Express decoded it (a field key is caller
 * text) and the Idempotency-Key header (it is stored), then lone surrogates and numbers JSON cannot keep.
 * Running before schema validation means a credential in a member with a length cap or a fixed form (a
 * PEM key in display_name, a token as language) is refused as a credential, naming the identity service,
 * rather than as too long; and before the size limits of values and notes. A caller whose token does not
 * verify never meets it (the route answers 401): nothing is written either way.
 */
export async function screenWrite({ params, req }: ScreenContext): Promise<void> {
  const strings: WrittenString[] = Object.entries(params).map(([name, text]) => ({ where: `path ${name}`, text }));
  const idempotencyKey = req.get('idempotency-key');
  // A random key is what the header is for: only a random part alone is allowed there.
  if (idempotencyKey !== undefined)
    strings.push({ where: 'header Idempotency-Key', text: idempotencyKey, random: true });
  const refusal = req.body === undefined ? undefined : readBody(req.body, strings);
  await refuseCredentials(strings);
  if (refusal) throw refusal;
}
