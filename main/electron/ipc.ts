/**
 * The console API over IPC: one channel, `{ method, params }` in, the API's result out. The sender
 * must be the console page in our window, and the payload must have the request's shape, before the
 * call reaches the API (which validates the params of each method itself).
 */
import type { IpcMain, IpcMainInvokeEvent, WebContents } from 'electron';
import { z } from 'zod';
import type { ConsoleApi, ConsoleResult } from '../../common/contract.ts';
import { isConsoleUrl } from './security.ts';

export const CONSOLE_CHANNEL = 'console:call';

const request = z
  .object({
    method: z
      .string()
      .min(1)
      .max(100)
      .regex(/^[A-Za-z][A-Za-z0-9._-]*$/),
    params: z.unknown().optional(),
  })
  .strict();

/** Rejects a call unless it comes from the console page loaded in the console window. */
export function trustedSender(
  event: Pick<IpcMainInvokeEvent, 'sender' | 'senderFrame'>,
  window: () => WebContents | undefined,
): boolean {
  const expected = window();
  if (!expected || event.sender !== expected) return false;
  const frame = event.senderFrame;
  if (!frame || frame.parent !== null) return false; // top frame only
  return isConsoleUrl(frame.url);
}

export async function handleConsoleCall(
  event: Pick<IpcMainInvokeEvent, 'sender' | 'senderFrame'>,
  payload: unknown,
  api: ConsoleApi,
  window: () => WebContents | undefined,
): Promise<ConsoleResult> {
  if (!trustedSender(event, window)) {
    return {
      ok: false,
      error: { message: 'Refused: this message did not come from the console window.', status: 403 },
    };
  }
  const parsed = request.safeParse(payload);
  if (!parsed.success) {
    return {
      ok: false,
      error: {
        message: 'Refused: a console call is { method: string, params?: object } and nothing else.',
        status: 400,
      },
    };
  }
  return api.call(parsed.data);
}

export function registerConsoleIpc(ipcMain: IpcMain, api: ConsoleApi, window: () => WebContents | undefined): void {
  ipcMain.handle(CONSOLE_CHANNEL, (event, payload: unknown) => handleConsoleCall(event, payload, api, window));
}
