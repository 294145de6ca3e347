import type { z } from 'zod';

type Check = (value: unknown) => boolean;
type Payload = { value: unknown; issues: unknown[] };

// Minimal view of the zod 4 internals this file reads. They are stable within zod 4, and fast-validator.test.ts
// checks that the compiled validator agrees with zod on thousands of valid and mutated records.
interface ZodNode {
  readonly _zod: {
    readonly def: ZodDef;
    readonly check?: (payload: Payload) => void;
  };
}

interface ZodDef {
  readonly type: string;
  readonly checks?: readonly ZodCheck[];
  readonly format?: string;
  readonly pattern?: RegExp;
  readonly shape?: Record<string, ZodNode>;
  readonly catchall?: ZodNode;
  readonly innerType?: ZodNode;
  readonly element?: ZodNode;
  readonly keyType?: ZodNode;
  readonly valueType?: ZodNode;
  readonly values?: readonly unknown[];
  readonly entries?: Record<string, unknown>;
}

interface ZodCheck {
  readonly _zod: {
    readonly def: {
      readonly check: string;
      readonly minimum?: number;
      readonly maximum?: number;
      readonly pattern?: RegExp;
      readonly format?: string;
      readonly value?: number;
      readonly inclusive?: boolean;
    };
    check(payload: Payload): void;
  };
}

/**
 * Wraps a zod schema with a fast accept path for verification, where almost every value is valid and zod's general
 * machinery (parse contexts, issue lists, a payload per node) costs more than the Ed25519 check of the signature.
 * The schema is compiled once into one plain JavaScript predicate (as zod's own JIT does for objects, but for the
 * whole tree): types, required and unknown keys, lengths, patterns and number bounds are inlined; refinements and URL
 * checks run zod's own check code. When the predicate accepts, the value is returned as parsed. Whatever it rejects,
 * and any schema using something it does not know, goes to `schema.safeParse`, so errors read as zod words them.
 * Only for schemas without defaults or transforms, whose output equals their input.
 */
export function fastSafeParse<S extends z.ZodType>(schema: S): (value: unknown) => z.ZodSafeParseResult<z.output<S>> {
  const fast = compileValidator(schema);
  return (value) => (fast?.(value) ? { success: true, data: value as z.output<S> } : schema.safeParse(value));
}

/** @internal Compiles a schema to a predicate, or undefined when it uses something this compiler does not know. */
export function compileValidator(schema: z.ZodType): Check | undefined {
  const gen = new Generator();
  const root = gen.node(schema as unknown as ZodNode);
  if (root === undefined) return undefined;
  // Generated code only ever sees literals it wrote itself (numbers, JSON-quoted keys) and the R array.
  const factory = new Function('R', `"use strict";\n${gen.functions.join('\n')}\nreturn ${root};`) as (
    r: unknown[],
  ) => Check;
  return factory(gen.refs);
}

class Generator {
  readonly functions: string[] = [];
  readonly refs: unknown[] = [];

  ref(value: unknown): string {
    this.refs.push(value);
    return `R[${this.refs.length - 1}]`;
  }

  /** Emits a function for one schema node and returns its name, or undefined if the node is not supported. */
  node(schema: ZodNode): string | undefined {
    const def = schema._zod.def;
    const body = this.typeLines(def);
    if (!body) return undefined;
    for (const check of def.checks ?? []) body.push(this.check(check));
    // String formats (datetime, url) are schemas that are also checks.
    if (def.type === 'string' && schema._zod.check) {
      body.push(
        def.format === 'datetime' && def.pattern
          ? `if (!${this.ref(def.pattern)}.test(v)) return false;`
          : `if (!${this.ref(runsClean(schema._zod.check))}(v)) return false;`,
      );
    }
    const name = `n${this.functions.length}`;
    this.functions.push('');
    this.functions[Number(name.slice(1))] = `function ${name}(v) {\n${body.join('\n')}\nreturn true;\n}`;
    return name;
  }

  /** The lines that check a node's type (and its children's), or undefined for a type this compiler does not know. */
  private typeLines(def: ZodDef): string[] | undefined {
    switch (def.type) {
      case 'string':
        return [`if (typeof v !== 'string') return false;`];
      case 'number':
        return [`if (typeof v !== 'number' || !Number.isFinite(v)) return false;`];
      case 'boolean':
        return [`if (typeof v !== 'boolean') return false;`];
      case 'literal':
      case 'enum':
        return [
          `if (!${this.ref(new Set(def.type === 'literal' ? def.values : Object.values(def.entries ?? {})))}.has(v)) return false;`,
        ];
      case 'optional':
      case 'nullable':
        return this.wrapperLines(def);
      case 'array':
        return this.arrayLines(def);
      case 'record':
        return this.recordLines(def);
      case 'object':
        return this.objectLines(def);
      default:
        return undefined;
    }
  }

  private wrapperLines(def: ZodDef): string[] | undefined {
    const inner = this.node(def.innerType!);
    if (!inner) return undefined;
    return [
      `if (v === ${def.type === 'optional' ? 'undefined' : 'null'}) return true;`,
      `if (!${inner}(v)) return false;`,
    ];
  }

  private arrayLines(def: ZodDef): string[] | undefined {
    const element = this.node(def.element!);
    if (!element) return undefined;
    return [
      `if (!Array.isArray(v)) return false;`,
      `for (let i = 0; i < v.length; i++) if (!${element}(v[i])) return false;`,
    ];
  }

  private recordLines(def: ZodDef): string[] | undefined {
    const key = this.node(def.keyType!);
    const value = this.node(def.valueType!);
    if (!key || !value) return undefined;
    return [
      `if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;`,
      `for (const k of Object.keys(v)) if (!${key}(k) || !${value}(v[k])) return false;`,
    ];
  }

  private objectLines(def: ZodDef): string[] | undefined {
    // Strict objects refuse unknown keys; loose ones (z.looseObject) keep them, so input and output are the same
    // either way. z.object() strips them (its output differs from its input): left to zod.
    const catchall = def.catchall?._zod.def.type;
    if (catchall !== 'never' && catchall !== 'unknown') return undefined;
    const lines = [`if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;`];
    for (const [key, field] of Object.entries(def.shape ?? {})) {
      const f = this.node(field);
      if (!f) return undefined;
      lines.push(`if (!${f}(v[${JSON.stringify(key)}])) return false;`);
    }
    if (catchall === 'never')
      lines.push(`for (const k in v) if (!${this.ref(new Set(Object.keys(def.shape ?? {})))}.has(k)) return false;`);
    return lines;
  }

  // The common checks inline; anything else (refinements, URLs) calls zod's own check code.
  check(c: ZodCheck): string {
    const d = c._zod.def;
    const num = (n: number | undefined) => (typeof n === 'number' && Number.isFinite(n) ? String(n) : undefined);
    switch (d.check) {
      case 'min_length':
        if (num(d.minimum)) return `if (v.length < ${num(d.minimum)}) return false;`;
        break;
      case 'max_length':
        if (num(d.maximum)) return `if (v.length > ${num(d.maximum)}) return false;`;
        break;
      case 'string_format':
        if (
          (d.format === 'regex' || d.format === 'starts_with') &&
          d.pattern &&
          !d.pattern.global &&
          !d.pattern.sticky
        ) {
          return `if (!${this.ref(d.pattern)}.test(v)) return false;`;
        }
        break;
      case 'number_format':
        if (d.format === 'safeint') return `if (!Number.isSafeInteger(v)) return false;`;
        break;
      case 'greater_than':
        if (num(d.value)) return `if (!(v ${d.inclusive ? '>=' : '>'} ${num(d.value)})) return false;`;
        break;
      case 'less_than':
        if (num(d.value)) return `if (!(v ${d.inclusive ? '<=' : '<'} ${num(d.value)})) return false;`;
        break;
    }
    return `if (!${this.ref(runsClean((p) => c._zod.check(p)))}(v)) return false;`;
  }
}

// Runs one zod check on a value; true when it adds no issue. A throwing check counts as a rejection (zod decides).
function runsClean(check: (payload: Payload) => void): Check {
  return (value) => {
    const payload: Payload = { value, issues: [] };
    try {
      check(payload);
    } catch {
      return false;
    }
    return payload.issues.length === 0;
  };
}
