/**
 * Launch at login, off by default: Electron's login items on macOS and Windows, an XDG autostart entry
 * on Linux (where Electron has no API for it).
 */
import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { App } from 'electron';

export function autostartFile(env: NodeJS.ProcessEnv = process.env): string {
  return join(env.XDG_CONFIG_HOME ?? join(homedir(), '.config'), 'autostart', 'hub-services.desktop');
}

export function autostartEntry(executable: string): string {
  const quoted = /[\s"'\\]/.test(executable) ? `"${executable.replace(/(["\\$`])/g, '\\$1')}"` : executable;
  return ['[Desktop Entry]', 'Type=Application', 'Name=Hub services', 'Comment=Local services for your AI-assistant hub', `Exec=${quoted} --hidden`, 'X-GNOME-Autostart-enabled=true', ''].join('\n');
}

export function setLaunchAtLogin(app: Pick<App, 'setLoginItemSettings'>, enabled: boolean, platform = process.platform, executable = process.execPath, env = process.env): void {
  if (platform === 'linux') {
    const file = autostartFile(env);
    if (enabled) {
      mkdirSync(join(file, '..'), { recursive: true });
      writeFileSync(file, autostartEntry(executable));
    } else if (existsSync(file)) {
      rmSync(file);
    }
    return;
  }
  app.setLoginItemSettings({ openAtLogin: enabled, args: ['--hidden'] });
}
