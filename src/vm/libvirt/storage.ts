import { callAsync } from './call.js';
import { LibvirtError, VirErr } from './errors.js';
import { libvirt, type Ptr, takePointerArray } from './ffi.js';
import { Handle } from './handle.js';
import type { Stream } from './stream.js';

/** A virStorageVolPtr. Its name is read once when wrapped. */
export class StorageVolume {
  readonly #handle: Handle;
  readonly name: string;
  readonly #uri: string;

  constructor(ptr: Ptr, uri: string) {
    this.#handle = new Handle(ptr, (p) => libvirt().virStorageVolFree(p));
    this.name = libvirt().virStorageVolGetName(ptr) ?? '';
    this.#uri = uri;
  }

  async path(): Promise<string> {
    return (await callAsync('volume path', libvirt().virStorageVolGetPath, [this.#handle.ptr], { uri: this.#uri }))!;
  }

  async upload(stream: Stream, offset: number, length: number): Promise<void> {
    await callAsync('volume upload', libvirt().virStorageVolUpload, [this.#handle.ptr, stream.ptr, offset, length, 0], {
      uri: this.#uri,
    });
  }

  async download(stream: Stream, offset: number, length: number): Promise<void> {
    await callAsync(
      'volume download',
      libvirt().virStorageVolDownload,
      [this.#handle.ptr, stream.ptr, offset, length, 0],
      { uri: this.#uri },
    );
  }

  async delete(): Promise<void> {
    await callAsync('volume delete', libvirt().virStorageVolDelete, [this.#handle.ptr, 0], { uri: this.#uri });
  }

  free(): void {
    this.#handle.free();
  }
}

/** A virStoragePoolPtr. */
export class StoragePool {
  readonly #handle: Handle;
  readonly #uri: string;

  constructor(ptr: Ptr, uri: string) {
    this.#handle = new Handle(ptr, (p) => libvirt().virStoragePoolFree(p));
    this.#uri = uri;
  }

  async isActive(): Promise<boolean> {
    return (
      (await callAsync('pool state', libvirt().virStoragePoolIsActive, [this.#handle.ptr], { uri: this.#uri })) === 1
    );
  }

  async build(): Promise<void> {
    await callAsync('pool build', libvirt().virStoragePoolBuild, [this.#handle.ptr, 0], { uri: this.#uri });
  }

  async start(): Promise<void> {
    await callAsync('pool start', libvirt().virStoragePoolCreate, [this.#handle.ptr, 0], { uri: this.#uri });
  }

  async setAutostart(on: boolean): Promise<void> {
    await callAsync('pool autostart', libvirt().virStoragePoolSetAutostart, [this.#handle.ptr, on ? 1 : 0], {
      uri: this.#uri,
    });
  }

  async refresh(): Promise<void> {
    await callAsync('pool refresh', libvirt().virStoragePoolRefresh, [this.#handle.ptr, 0], { uri: this.#uri });
  }

  async xml(): Promise<string> {
    return (await callAsync('pool XML', libvirt().virStoragePoolGetXMLDesc, [this.#handle.ptr, 0], {
      uri: this.#uri,
    }))!;
  }

  async volumes(): Promise<StorageVolume[]> {
    const out: [Ptr | null] = [null];
    const count = await callAsync('list volumes', libvirt().virStoragePoolListAllVolumes, [this.#handle.ptr, out, 0], {
      uri: this.#uri,
    });
    if (out[0] === null) return [];
    return takePointerArray(out[0], count).map((ptr) => new StorageVolume(ptr, this.#uri));
  }

  async lookupVolume(name: string): Promise<StorageVolume | undefined> {
    try {
      const ptr = await callAsync('volume lookup', libvirt().virStorageVolLookupByName, [this.#handle.ptr, name], {
        uri: this.#uri,
      });
      return new StorageVolume(ptr!, this.#uri);
    } catch (error) {
      if (error instanceof LibvirtError && error.is(VirErr.noStorageVol)) return undefined;
      throw error;
    }
  }

  async createVolume(xml: string): Promise<StorageVolume> {
    const ptr = await callAsync('volume create', libvirt().virStorageVolCreateXML, [this.#handle.ptr, xml, 0], {
      uri: this.#uri,
    });
    return new StorageVolume(ptr!, this.#uri);
  }

  free(): void {
    this.#handle.free();
  }
}
