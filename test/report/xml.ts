/**
 * A strict well-formedness check for the XML devpivot writes (no DTDs, no CDATA): balanced elements, quoted
 * attributes, no raw `<` or `&` in text, only the five predefined entities and numeric references.
 * Returns the elements as a tree so tests can look inside.
 */
export interface XmlElement {
  name: string;
  attributes: Record<string, string>;
  children: XmlElement[];
  text: string;
}

const ENTITY = /&(?:amp|lt|gt|quot|apos|#\d+|#x[0-9a-fA-F]+);/y;

function decode(text: string, at: number): string {
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '<') throw new Error(`raw '<' in text at ${at + i}`);
    if (text[i] === '&') {
      ENTITY.lastIndex = i;
      if (!ENTITY.test(text)) throw new Error(`bad entity at ${at + i}: ${text.slice(i, i + 10)}`);
    }
  }
  return text
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&apos;/g, "'")
    .replace(/&amp;/g, '&');
}

export function parseXml(xml: string): XmlElement {
  let pos = 0;
  const declaration = /^<\?xml [^?]*\?>\s*/.exec(xml);
  if (!declaration) throw new Error('no XML declaration');
  pos = declaration[0].length;
  const root: XmlElement = { name: '#document', attributes: {}, children: [], text: '' };
  const stack: XmlElement[] = [root];
  while (pos < xml.length) {
    const lt = xml.indexOf('<', pos);
    const text = xml.slice(pos, lt < 0 ? xml.length : lt);
    stack.at(-1)!.text += decode(text, pos);
    if (lt < 0) break;
    const gt = xml.indexOf('>', lt);
    if (gt < 0) throw new Error(`unterminated tag at ${lt}`);
    const tag = xml.slice(lt + 1, gt);
    pos = gt + 1;
    if (tag.startsWith('/')) {
      const open = stack.pop()!;
      if (open.name !== tag.slice(1)) throw new Error(`</${tag.slice(1)}> closes <${open.name}> at ${lt}`);
      continue;
    }
    const selfClosing = tag.endsWith('/');
    const body = selfClosing ? tag.slice(0, -1) : tag;
    const nameMatch = /^([A-Za-z_][\w.-]*)/.exec(body);
    if (!nameMatch) throw new Error(`bad tag name at ${lt}`);
    const element: XmlElement = { name: nameMatch[1]!, attributes: {}, children: [], text: '' };
    let rest = body.slice(nameMatch[1]!.length);
    const attribute = /^\s+([A-Za-z_][\w.-]*)="([^"<]*)"/;
    for (let m = attribute.exec(rest); m; m = attribute.exec(rest)) {
      if (m[1]! in element.attributes) throw new Error(`duplicate attribute ${m[1]}`);
      element.attributes[m[1]!] = decode(m[2]!, lt);
      rest = rest.slice(m[0].length);
    }
    if (rest.trim() !== '') throw new Error(`bad attributes in <${element.name}> at ${lt}: ${rest}`);
    stack.at(-1)!.children.push(element);
    if (!selfClosing) stack.push(element);
  }
  if (stack.length !== 1) throw new Error(`unclosed <${stack.at(-1)!.name}>`);
  if (root.children.length !== 1 || root.text.trim() !== '') throw new Error('not exactly one root element');
  return root.children[0]!;
}
