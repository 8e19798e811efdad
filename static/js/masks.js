// Masks of class indices drawn over images: a mask comes as a grayscale PNG
// (each pixel's class, 255 where it is ignored), is read once into its
// indices, and is drawn on a canvas of its size through a colour table
// (an [r, g, b] or null a value), so that sliders and toggles redraw it
// without reading it again.
export const IGNORED = 255;

// "#rrggbb" as [r, g, b].
export const rgbOf = (hex) => [1, 3, 5].map((at) => parseInt(hex.slice(at, at + 2), 16));

// The class indices of the PNG at `src` (an address or a data: URL), `width` × `height`.
export async function indicesOf(src, width, height) {
  const image = new Image();
  image.src = src;
  await image.decode();
  const reader = new OffscreenCanvas(width, height).getContext("2d");
  reader.drawImage(image, 0, 0);
  const rgba = reader.getImageData(0, 0, width, height).data;
  const indices = new Uint8Array(width * height);
  for (let i = 0; i < indices.length; i += 1) indices[i] = rgba[4 * i];
  return indices;
}

// Draw `indices` on `canvas`, value v in `table[v]` (none where null) at `alpha` (0 to 255).
export function drawIndices(canvas, indices, table, alpha) {
  const context = canvas.getContext("2d");
  const picture = context.createImageData(canvas.width, canvas.height);
  for (let i = 0; i < indices.length; i += 1) {
    const colour = table[indices[i]];
    if (!colour) continue;
    picture.data.set(colour, 4 * i);
    picture.data[4 * i + 3] = alpha;
  }
  context.putImageData(picture, 0, 0);
}

// A percentage slider's value as a pixel's alpha (0 to 255).
export const alphaOf = (slider) => Math.round((255 * Number(slider.value)) / 100);
