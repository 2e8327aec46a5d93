/**
 * The provider benchmarks' HTTP client: node:http with one keep-alive agent, the same for every server. It
 * shares the two cores with the servers and the CLI runs, so it should cost little: fetch (undici) spent
 * about 2 ms of CPU per request here, as much as either server, and at the cap that came out of the CLI's
 * share and made every server look slower than it is; node:http spends about 0.9 ms.
 */
import http from 'node:http';

const agent = new http.Agent({ keepAlive: true });

/** One chat completion, sent: `onResponse` gets the response; the caller listens for the request's errors. */
export function completionRequest(
  url: string,
  { system, prompt, stream }: { system: string; prompt: string; stream: boolean },
  onResponse: (res: http.IncomingMessage) => void,
): http.ClientRequest {
  const body = JSON.stringify({
    model: 'sonnet',
    ...(stream ? { stream: true } : {}),
    messages: [
      { role: 'system', content: system },
      { role: 'user', content: prompt },
    ],
  });
  const target = new URL(`${url}/v1/chat/completions`);
  const req = http.request(
    {
      host: target.hostname,
      port: target.port,
      path: target.pathname,
      method: 'POST',
      agent,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
    },
    onResponse,
  );
  req.end(body);
  return req;
}
