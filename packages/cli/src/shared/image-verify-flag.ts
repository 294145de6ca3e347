/** The flag that pushes images unverified (`baton up` and `baton plan`). */
export const SKIP_IMAGE_VERIFY_FLAG = '--insecure-skip-image-verify';

/** What baton prints to stderr first when images go unverified: it must not be missed in a pipeline's log. */
export const SKIP_IMAGE_VERIFY_WARNING =
  'WARNING: --insecure-skip-image-verify: the images are pushed without verifying their signatures; the audit event records that they were not verified\n';
