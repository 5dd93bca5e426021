import { execa } from 'execa';

/** Async: the embedded registry runs in this process, so a blocking skopeo call would deadlock. */
export async function skopeoInspect(ref: string, flag?: '--raw' | '--config') {
  const args = ['inspect', '--tls-verify=false', ...(flag ? [flag] : []), `docker://${ref}`];
  return JSON.parse((await execa('skopeo', args)).stdout);
}
