'use strict'
// pelt.d.ts's `Result` is the result document pelt writes, field for field: the TypeScript
// compiler reads the declared type, and it is walked beside docs/result-schema.json (the schema
// every end-to-end test checks pelt's real output against). Every field of the schema is
// declared with a type of the same kind and the same null, no field is declared that the schema
// lacks, and an enum's values are the literal union's.

const test = require('node:test')
const assert = require('node:assert')
const path = require('node:path')
const ts = require('typescript')

const schema = require(path.join(__dirname, '..', '..', '..', 'docs', 'result-schema.json'))

/** The schema node `node` with its `$ref` followed. */
function resolve (node) {
  while (node && node.$ref) {
    node = schema.$defs[node.$ref.replace('#/$defs/', '')]
  }
  return node
}

/** The schema's alternatives of `node`, null apart: { nullable, kinds: [schema nodes] }. */
function alternatives (node) {
  node = resolve(node)
  const any = node.oneOf || node.anyOf
  if (any) {
    const parts = any.map(alternatives)
    return { nullable: parts.some(p => p.nullable), kinds: parts.flatMap(p => p.kinds) }
  }
  const types = Array.isArray(node.type) ? node.type : [node.type]
  const nullable = types.includes('null') || (node.enum || []).includes(null)
  const rest = types.filter(t => t !== 'null')
  if (rest.length === 0 && !node.enum && !node.properties && !node.items) return { nullable, kinds: [] }
  return { nullable, kinds: [{ ...node, type: rest.length ? rest : undefined }] }
}

/** What the schema node is: object, map, array, string, number, boolean or enum. */
function schemaKind (node) {
  if (node.enum) return 'enum'
  const types = node.type || []
  if (types.includes('object') || node.properties) {
    return node.properties ? 'object' : 'map'
  }
  if (types.includes('array') || node.items) return 'array'
  if (types.includes('string')) return 'string'
  if (types.includes('integer') || types.includes('number')) return 'number'
  if (types.includes('boolean')) return 'boolean'
  return 'any'
}

function program () {
  const file = path.join(__dirname, '..', 'pelt.d.ts')
  const p = ts.createProgram([file], { strict: true, noEmit: true })
  const source = p.getSourceFile(file)
  const checker = p.getTypeChecker()
  const result = source.statements.find(s => ts.isInterfaceDeclaration(s) && s.name.text === 'Result')
  assert.ok(result, 'pelt.d.ts declares Result')
  return { checker, type: checker.getTypeAtLocation(result.name), node: result }
}

/** The TS type's alternatives, null apart (and the undefined of an optional field): { nullable,
 * types }. */
function tsAlternatives (type) {
  const parts = type.isUnion() ? type.types : [type]
  const nullable = parts.some(t => t.flags & ts.TypeFlags.Null)
  const types = parts.filter(t => !(t.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined)))
  return { nullable, types }
}

/** What the TS types are, as schemaKind names them. */
function tsKind (checker, types) {
  if (types.length === 0) return 'any'
  if (types.every(t => t.isStringLiteral() || t.flags & ts.TypeFlags.BooleanLiteral) && types.some(t => t.isStringLiteral())) return 'enum'
  if (types.every(t => t.flags & (ts.TypeFlags.Boolean | ts.TypeFlags.BooleanLiteral))) return 'boolean'
  const t = types[0]
  if (t.flags & ts.TypeFlags.Any) return 'any'
  if (t.flags & ts.TypeFlags.String) return 'string'
  if (t.flags & ts.TypeFlags.Number) return 'number'
  if (checker.isArrayType(t) || checker.isTupleType(t)) return 'array'
  if (checker.getIndexInfoOfType(t, ts.IndexKind.String) && t.getProperties().length === 0) return 'map'
  if (t.flags & ts.TypeFlags.Object) return 'object'
  return 'other'
}

/** Walks schema node `s` beside TS type `t` at `where`, adding each difference to `out`. */
function walk (checker, s, t, where, out) {
  const sa = alternatives(s)
  const ta = tsAlternatives(t)
  if (sa.nullable && !ta.nullable) out.push(`${where}: the schema allows null, the type does not`)
  if (ta.nullable && !sa.nullable && sa.kinds.length) out.push(`${where}: the type allows null, the schema does not`)
  if (sa.kinds.length !== 1) return
  const node = sa.kinds[0]
  const want = schemaKind(node)
  const have = tsKind(checker, ta.types)
  if (want === 'any' || have === 'any') return
  // A number the schema gives as a string (an enum of one shape) or numbers as a string enum.
  if (want !== have && !(want === 'enum' && have === 'string')) {
    out.push(`${where}: the schema has ${want}, the type ${have}`)
    return
  }
  if (want === 'enum' && have === 'enum') {
    const values = new Set(node.enum.filter(v => v !== null))
    const literals = new Set(ta.types.filter(x => x.isStringLiteral()).map(x => x.value))
    for (const v of values) if (!literals.has(v)) out.push(`${where}: '${v}' is not in the type`)
    for (const v of literals) if (!values.has(v)) out.push(`${where}: '${v}' is not in the schema`)
  }
  if (want === 'array' && node.items && !Array.isArray(node.items) && checker.isArrayType(ta.types[0])) {
    walk(checker, node.items, checker.getTypeArguments(ta.types[0])[0], `${where}[]`, out)
  }
  if (want === 'map' && node.additionalProperties && typeof node.additionalProperties === 'object') {
    const info = checker.getIndexInfoOfType(ta.types[0], ts.IndexKind.String)
    walk(checker, node.additionalProperties, info.type, `${where}{}`, out)
  }
  if (want === 'object') {
    const props = new Map(ta.types[0].getProperties().map(p => [p.name, p]))
    for (const [name, sub] of Object.entries(node.properties)) {
      const p = props.get(name)
      const at = where ? `${where}.${name}` : name
      if (!p) {
        out.push(`${at}: in the schema, not declared`)
        continue
      }
      // (Whether a field may be absent is not compared: the schema leaves out of `required`
      // what older results lack, though pelt now always writes it.)
      const decl = p.valueDeclaration || p.declarations[0]
      walk(checker, sub, checker.getTypeOfSymbolAtLocation(p, decl), at, out)
    }
    for (const name of props.keys()) {
      if (!(name in node.properties)) out.push(`${where ? `${where}.` : ''}${name}: declared, not in the schema`)
    }
  }
}

test('pelt.d.ts declares the result document the schema describes, field for field', () => {
  const { checker, type } = program()
  const out = []
  walk(checker, schema, type, '', out)
  assert.deepStrictEqual(out, [], `pelt.d.ts's Result differs from docs/result-schema.json:\n${out.join('\n')}`)
})

test('the check sees a difference', () => {
  // The same walk over a schema with one more field, one field fewer and one enum value more.
  const { checker, type } = program()
  const changed = JSON.parse(JSON.stringify(schema))
  changed.properties.a_new_field = { type: 'string' }
  delete changed.properties.notes
  changed.properties.load_model = { enum: ['closed', 'open', 'half-open'] }
  const out = []
  walk(checker, changed, type, '', out)
  assert.ok(out.includes('a_new_field: in the schema, not declared'), out.join('\n'))
  assert.ok(out.includes('notes: declared, not in the schema'), out.join('\n'))
  assert.ok(out.includes("load_model: 'half-open' is not in the type"), out.join('\n'))
})
