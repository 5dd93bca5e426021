/**
 * Registry credentials, looked up where podman/skopeo and docker keep them: `REGISTRY_AUTH_FILE`,
 * `$XDG_RUNTIME_DIR/containers/auth.json`, `~/.config/containers/auth.json`, then `$DOCKER_CONFIG/config.json`
 * (default `~/.docker/config.json`). The first file with a matching entry wins; within a file, the most specific
 * key (`host/namespace/repo` over `host`) wins, as in containers-auth.json(5).
 */
import { readFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DevpivotError } from '../../core/errors.js';

export interface Credentials {
  username: string;
  password: string;
}

export function authFiles(env: NodeJS.ProcessEnv = process.env): string[] {
  const home = env.HOME ?? homedir();
  const files: string[] = [];
  if (env.REGISTRY_AUTH_FILE) files.push(env.REGISTRY_AUTH_FILE);
  if (env.XDG_RUNTIME_DIR) files.push(join(env.XDG_RUNTIME_DIR, 'containers', 'auth.json'));
  files.push(join(env.XDG_CONFIG_HOME ?? join(home, '.config'), 'containers', 'auth.json'));
  files.push(join(env.DOCKER_CONFIG ?? join(home, '.docker'), 'config.json'));
  return files;
}

/** `https://index.docker.io/v1/` → `docker.io`; `host:5000/ns` stays. */
function normaliseKey(key: string): string {
  const stripped = key.replace(/^[a-z]+:\/\//, '').replace(/\/+$/, '');
  const [host, ...path] = stripped.split('/');
  const dockerHub = ['index.docker.io', 'registry-1.docker.io'];
  const normalHost = dockerHub.includes(host!) ? 'docker.io' : host!;
  // Docker's legacy `index.docker.io/v1` key names the host, not a repository.
  if (normalHost === 'docker.io' && path[0] === 'v1') return 'docker.io';
  return [normalHost, ...path].join('/');
}

function decode(entry: { auth?: string; username?: string; password?: string }, file: string): Credentials | null {
  if (entry.username && entry.password) return { username: entry.username, password: entry.password };
  if (!entry.auth) return null;
  const text = Buffer.from(entry.auth, 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon < 0) {
    throw new DevpivotError('AUTH_FILE_INVALID', `credentials in ${file} are not base64 of 'user:password'`, {
      hint: 'log in again (podman login / skopeo login / docker login)',
    });
  }
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

/** Credentials for `registry` (host[:port]) and `repository`, or null when no file has any. */
export async function findCredentials(
  registry: string,
  repository: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<Credentials | null> {
  const wanted = `${registry}/${repository}`;
  for (const file of authFiles(env)) {
    let parsed: { auths?: Record<string, { auth?: string; username?: string; password?: string }> };
    try {
      parsed = JSON.parse(await readFile(file, 'utf8'));
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new DevpivotError(
        'AUTH_FILE_INVALID',
        `cannot read registry credentials from ${file}: ${(error as Error).message}`,
        {
          hint: 'fix or remove the file; it must be JSON like {"auths": {"HOST:PORT": {"auth": "base64(user:pass)"}}}',
          cause: error,
        },
      );
    }
    let best: { key: string; credentials: Credentials } | null = null;
    for (const [key, entry] of Object.entries(parsed.auths ?? {})) {
      const normal = normaliseKey(key);
      if (wanted !== normal && !wanted.startsWith(`${normal}/`)) continue;
      const credentials = decode(entry, file);
      if (credentials && (!best || normal.length > best.key.length)) best = { key: normal, credentials };
    }
    if (best) return best.credentials;
  }
  return null;
}
