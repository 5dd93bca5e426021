import { libvirtUri, stateDir } from '../../core/paths.js';
import { type CheckResult, runChecks } from '../../doctor/checks.js';
import { type Command, connectOption } from '../command.js';

export function renderTable(results: CheckResult[]): string {
  const width = Math.max(...results.map((result) => result.name.length));
  const lines = results.map((result) => {
    const mark = result.ok ? 'ok  ' : result.required ? 'FAIL' : 'warn';
    const row = `${mark}  ${result.name.padEnd(width)}  ${result.detail}`;
    return result.fix ? `${row}\n      ${' '.repeat(width)}  fix: ${result.fix}` : row;
  });
  const failed = results.filter((result) => !result.ok && result.required).length;
  lines.push('', failed === 0 ? 'All requirements met.' : `${failed} requirement(s) missing: apply the fixes above.`);
  return lines.join('\n');
}

export const command: Command = {
  name: 'doctor',
  summary: 'Check that this machine can run devpivot',
  usage: '[--json] [--connect URI]',
  description:
    'Check every requirement (libvirt, qemu, KVM or TCG, fw_cfg, skopeo, ostree, ignition-validate, GRUB, disk,\n' +
    'storage pool permissions) and say how to fix what is missing. Exit status 1 when a requirement is missing.',
  options: {
    json: { type: 'boolean', description: 'Print an array of {name, ok, detail, fix}' },
    connect: connectOption(),
  },
  async run({ args, stdout, env }) {
    const results = await runChecks({ uri: libvirtUri(args.string('connect'), env), stateDir: stateDir(env), env });
    if (args.flag('json')) {
      stdout.write(
        `${JSON.stringify(
          results.map(({ name, ok, detail, fix }) => ({ name, ok, detail, fix })),
          null,
          2,
        )}\n`,
      );
    } else {
      stdout.write(`${renderTable(results)}\n`);
    }
    return results.some((result) => !result.ok && result.required) ? 1 : 0;
  },
};
