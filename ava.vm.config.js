// Tests that boot VMs under libvirt. `npm run test:vm` (scripts/test-vm.mjs) runs each file in its own ava process
// with this config, two lanes, heaviest recorded file first; `npx ava --config ava.vm.config.js FILE` runs one.
// Every test names its own session, so files never share a domain.
export default {
  files: ['dist/test/**/*.vm.test.js'],
  timeout: '10m',
  concurrency: 2,
  workerThreads: false,
};
