// @ts-check
/** The manifest module: one schema, one writer, one reader. */
export { MANIFEST_NAME, MANIFEST_VERSION, ManifestFormatError, checkManifest } from './schema.js';
export { parseManifest, readManifest } from './read.js';
export { createManifestWriter, formatManifest } from './write.js';
