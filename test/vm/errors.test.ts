import test from 'ava';
import { DevpivotError } from '../../src/core/errors.js';
import { LibvirtError, toLibvirtError, VirErr } from '../../src/vm/libvirt/errors.js';

const rpc = 7;

test('daemon not running: LIBVIRT_UNREACHABLE with a hint to start it', (t) => {
  const error = toLibvirtError(
    'connect',
    {
      code: VirErr.systemError,
      domain: rpc,
      message: "Failed to connect socket to '/run/libvirt/libvirt-sock': No such file or directory",
    },
    'qemu:///system',
  );
  t.true(error instanceof DevpivotError);
  t.is(error.code, 'LIBVIRT_UNREACHABLE');
  t.regex(error.message, /qemu:\/\/\/system/);
  t.regex(error.hint ?? '', /libvirtd/);
  t.deepEqual(error.libvirt.code, VirErr.systemError);
});

test('permission denied on the socket or on an image: LIBVIRT_PERMISSION', (t) => {
  const socket = toLibvirtError('connect', {
    code: VirErr.systemError,
    domain: rpc,
    message: "Failed to connect socket to '/run/libvirt/libvirt-sock': Permission denied",
  });
  t.is(socket.code, 'LIBVIRT_PERMISSION');
  t.regex(socket.hint ?? '', /libvirt" group/);
  const image = toLibvirtError('start of x', {
    code: VirErr.operationFailed,
    domain: 10,
    message:
      "internal error: process exited while connecting to monitor: Could not open '/root/disk.qcow2': Permission denied",
  });
  t.is(image.code, 'LIBVIRT_PERMISSION');
  t.regex(image.hint ?? '', /storage pool/);
});

test('fw_cfg not supported by the hypervisor: VM_FWCFG_UNSUPPORTED', (t) => {
  const error = toLibvirtError('domain definition', {
    code: VirErr.configUnsupported,
    domain: 10,
    message: 'unsupported configuration: fw_cfg is not supported with this QEMU binary',
  });
  t.is(error.code, 'VM_FWCFG_UNSUPPORTED');
  t.true(error instanceof LibvirtError);
});

test('anything else keeps libvirt code, domain and message', (t) => {
  const error = toLibvirtError('start of x', {
    code: VirErr.operationInvalid,
    domain: 10,
    message: 'domain is already running',
  });
  t.is(error.code, 'LIBVIRT_ERROR');
  t.true(error.is(VirErr.operationInvalid));
  t.is(error.libvirt.domain, 10);
  t.regex(error.message, /libvirt start of x failed: domain is already running/);
});
