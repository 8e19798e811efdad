// Boxes drawn over an image, as the dataset gallery, Detect one and a
// detector's evaluation report draw them: SVG elements, and a colour per
// class (the charts' colours) with grey for regions of no class.
import { COLOURS } from "./charts.js";

const SVG = "http://www.w3.org/2000/svg";
export const IGNORE_COLOUR = "#6b7280";

// The colour of class `index`; null (an ignore region of every class) is grey.
export function colour(index) {
  return index === null ? IGNORE_COLOUR : COLOURS[index % COLOURS.length];
}

// An SVG element with its attributes and children.
export function svg(name, attributes = {}, ...children) {
  const node = document.createElementNS(SVG, name);
  for (const [key, value] of Object.entries(attributes)) node.setAttribute(key, value);
  node.append(...children);
  return node;
}
