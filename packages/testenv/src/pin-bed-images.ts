/**
 * Rewrites every `image: <upstream name>…` line of a manifest to the bed's pin of that image (`name:tag@digest` of
 * the build pushed to the bed's registry): upstream's digests cannot be pulled here, so a bed's copy of a profile
 * pins what the bed built from the same sources.
 */
export function pinBedImages(text: string, pins: Readonly<Record<string, string>>): string {
  let out = text;
  for (const [name, pinned] of Object.entries(pins))
    out = out.replace(new RegExp(`(image: )${name.replace(/[.]/g, '\\.')}[:@]\\S+`, 'g'), `$1${pinned}`);
  return out;
}
