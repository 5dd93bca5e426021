/**
 * An OCI image layout directory (image-spec image-layout.md) read as a copy source: `index.json` names the
 * images, `blobs/sha256/…` holds manifests and blobs byte for byte. The image is chosen as containers/image's
 * oci transport chooses it (oci/layout/oci_src.go `getManifestDescriptor`, containers/image v5.23): with a REF,
 * the entry whose `org.opencontainers.image.ref.name` is REF; without, the only entry (several are an error).
 */
import { copyFile, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { DevpivotError } from '../core/errors.js';
import type { Descriptor } from '../oci/descriptor.js';
import { digestOf } from '../oci/digest.js';
import type { ImageIndex } from '../oci/manifest.js';
import { MediaType } from '../oci/media-types.js';
import type { FetchedManifest } from './operations/manifests.js';

export const REF_NAME = 'org.opencontainers.image.ref.name';

/** The index.json entry `ref` names (undefined: the only one), or an error saying what the layout holds. */
export function chooseLayoutEntry(index: ImageIndex, ref: string | undefined, where: string): Descriptor {
  const refs = index.manifests.map((m) => m.annotations?.[REF_NAME]).filter((name): name is string => !!name);
  const listed = refs.length > 0 ? ` (refs: ${refs.join(', ')})` : '';
  if (ref !== undefined) {
    const found = index.manifests.find((m) => m.annotations?.[REF_NAME] === ref);
    if (!found)
      throw new DevpivotError('LOCAL_IMAGE_NOT_FOUND', `${where} has no image named '${ref}'${listed}`, {
        hint: refs.length > 0 ? `name one of its refs: ${refs.join(', ')}` : 'leave the :REF out',
        exitCode: 2,
      });
    return found;
  }
  if (index.manifests.length === 1) return index.manifests[0]!;
  throw new DevpivotError(
    'LOCAL_IMAGE_AMBIGUOUS',
    index.manifests.length === 0
      ? `${where} holds no image`
      : `${where} holds ${index.manifests.length} images${listed}: which one is meant?`,
    {
      hint: refs.length > 0 ? `add :REF, one of ${refs.join(', ')}` : 'an OCI layout with one image, or add :REF',
      exitCode: 2,
    },
  );
}

/** The layout's index.json, or a typed error saying why there is none. */
export async function readLayoutIndex(dir: string): Promise<ImageIndex> {
  let text: string;
  try {
    text = await readFile(join(dir, 'index.json'), 'utf8');
  } catch (error) {
    throw new DevpivotError('LOCAL_IMAGE_NOT_FOUND', `${dir} is not an OCI layout (no readable index.json)`, {
      hint: 'name an OCI layout directory (skopeo copy … oci:DIR:REF makes one)',
      exitCode: 2,
      cause: error,
    });
  }
  return JSON.parse(text) as ImageIndex;
}

/** What copyImage reads from: an OCI layout here, a registry repository in copy.ts. */
export interface CopySource {
  describe: string;
  /** The manifest the tag names (the layout's chosen entry), or one by digest. */
  getManifest(reference: string): Promise<FetchedManifest>;
  /** Put the blob at `path` (its destination verifies the digest); `onProgress` with the bytes copied. */
  fetchBlob(descriptor: Descriptor, path: string, onProgress: (done: number) => void): Promise<void>;
  /** The reference of the chosen entry (copyImage asks getManifest for it). */
  top: string;
}

export async function layoutSource(dir: string, ref: string | undefined): Promise<CopySource> {
  const index = await readLayoutIndex(dir);
  const entry = chooseLayoutEntry(index, ref, `oci:${dir}`);
  const blob = (digest: string) => join(dir, 'blobs', ...digest.split(':'));
  return {
    describe: `oci:${dir}`,
    top: entry.digest,
    async getManifest(reference) {
      const bytes = await readFile(blob(reference)).catch((error) => {
        throw new DevpivotError('LOCAL_IMAGE_NOT_FOUND', `oci:${dir} lacks the manifest ${reference}`, {
          hint: 'the layout is incomplete: copy it again',
          cause: error,
        });
      });
      if (digestOf(bytes) !== reference)
        throw new DevpivotError('DIGEST_MISMATCH', `oci:${dir}: the manifest ${reference} does not match its digest`);
      const mediaType =
        (reference === entry.digest ? entry.mediaType : undefined) ??
        (JSON.parse(bytes.toString('utf8')) as { mediaType?: string }).mediaType ??
        MediaType.ociManifest;
      return { bytes, mediaType, digest: reference };
    },
    async fetchBlob(descriptor, path, onProgress) {
      await copyFile(blob(descriptor.digest), path).catch((error) => {
        throw new DevpivotError('LOCAL_IMAGE_NOT_FOUND', `oci:${dir} lacks the blob ${descriptor.digest}`, {
          hint: 'the layout is incomplete: copy it again',
          cause: error,
        });
      });
      onProgress(descriptor.size);
    },
  };
}
