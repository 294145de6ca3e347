// Test helpers of @baton/progress (`@baton/progress/testing`): never exported from the production index.

/** A stream that is not a TTY and keeps what is written, for the views' plain lines. */
export function captureStream(): { readonly out: NodeJS.WriteStream; text(): string } {
  const chunks: string[] = [];
  const out = {
    isTTY: false,
    write: (c: string) => {
      chunks.push(c);
      return true;
    },
  } as unknown as NodeJS.WriteStream;
  return { out, text: () => chunks.join('') };
}
