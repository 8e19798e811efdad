// Masks of class indices drawn over images: a mask comes as a grayscale PNG
// (each pixel's class, 255 where it is ignored), is read once into its
// indices, and is drawn on a canvas of its size through a colour table
// (an [r, g, b] or null a value), so that sliders and toggles redraw it
// without reading it again. A mask of objects (instance segmentation's)
// comes as an RGB PNG, red the class and green the object's number: its
// outlines, where the number changes, are drawn solid.
export const IGNORED = 255;

// "#rrggbb" as [r, g, b].
export const rgbOf = (hex) => [1, 3, 5].map((at) => parseInt(hex.slice(at, at + 2), 16));

// The values of channel `channel` (0 red, 1 green) of the PNG at `src` (an address or a data: URL),
// `width` × `height`.
export async function indicesOf(src, width, height, channel = 0) {
  const image = new Image();
  image.src = src;
  await image.decode();
  const reader = new OffscreenCanvas(width, height).getContext("2d");
  reader.drawImage(image, 0, 0);
  const rgba = reader.getImageData(0, 0, width, height).data;
  const indices = new Uint8Array(width * height);
  for (let i = 0; i < indices.length; i += 1) indices[i] = rgba[4 * i + channel];
  return indices;
}

// The pixels of an object (a non-zero value of `numbers`, width × height) at its outline: a
// 4-neighbour of another value, or the image's edge (1 there, else 0).
export function outlines(numbers, width, height) {
  const edge = new Uint8Array(numbers.length);
  for (let y = 0; y < height; y += 1) {
    for (let x = 0; x < width; x += 1) {
      const i = y * width + x;
      const k = numbers[i];
      if (k && (x === 0 || y === 0 || x + 1 === width || y + 1 === height || numbers[i - 1] !== k
        || numbers[i + 1] !== k || numbers[i - width] !== k || numbers[i + width] !== k)) edge[i] = 1;
    }
  }
  return edge;
}

// Draw `indices` on `canvas`, value v in `table[v]` (none where null) at `alpha` (0 to 255), solid
// where `edges` (an outline, optional) is 1.
export function drawIndices(canvas, indices, table, alpha, edges = null) {
  const context = canvas.getContext("2d");
  const picture = context.createImageData(canvas.width, canvas.height);
  for (let i = 0; i < indices.length; i += 1) {
    const colour = table[indices[i]];
    if (!colour) continue;
    picture.data.set(colour, 4 * i);
    picture.data[4 * i + 3] = edges && edges[i] ? 255 : alpha;
  }
  context.putImageData(picture, 0, 0);
}

// A percentage slider's value as a pixel's alpha (0 to 255).
export const alphaOf = (slider) => Math.round((255 * Number(slider.value)) / 100);
