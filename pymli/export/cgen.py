"""Write a traced :class:`~pymli.export.trace.Program` as C99 source over the MLI 2.0 API.

Nothing from the model reaches the C source except numbers: identifiers are generated
(``t12_conv2d_out``, ``c3``, ``cfg4``), C function, struct, field and enumerator names come from
pymli's own registry and are checked against a strict pattern, and model names appear only inside
comments, reduced to printable ASCII with comment delimiters, trigraphs and backslashes broken.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .. import capi
from ..formats import RoundMode
from .plan import BufferPlan
from .trace import Call, ExportError, IntArg, LutArg, Program, StructArg, TensorArg

# the generated files (comment and c_int_type are this package's helpers)
__all__ = ["model_h", "model_c", "model_check_c", "cmakelists", "readme"]

_C_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")
_C_ENUM = re.compile(r"^[A-Z][A-Z0-9_]{0,63}$")
_PTR = {1: "pi8", 2: "pi16", 4: "pi32"}
_VAL = {1: "i8", 2: "i16", 4: "i32"}
_CTYPE = {np.dtype(np.int8): "int8_t", np.dtype(np.int16): "int16_t", np.dtype(np.int32): "int32_t"}


def comment(text: str, limit: int = 100) -> str:
    """``text`` made safe inside a ``/* ... */`` comment: printable ASCII only, no delimiters.

    Args:
        text: any text (a model or tensor name from an untrusted file).
        limit: the largest length kept.

    Returns:
        The cleaned text, at most ``limit`` characters.
    """
    s = "".join(ch if " " <= ch <= "~" else "?" for ch in str(text))
    s = s.replace("\\", "/")
    while "*/" in s or "/*" in s or "??" in s:
        s = s.replace("*/", "* /").replace("/*", "/ *").replace("??", "?.")
    return s[:limit]


def c_int_type(dtype: np.dtype) -> str:
    """The ``<stdint.h>`` type of an integer container dtype.

    Args:
        dtype: int8, int16 or int32 (or uint8).

    Returns:
        The C type name, e.g. ``int8_t``.

    Raises:
        ExportError: a dtype with no C container.
    """
    try:
        return _CTYPE[np.dtype(dtype)]
    except KeyError:
        raise ExportError(f"no C container for {np.dtype(dtype)}") from None


def _ident(name: str) -> str:
    if not _C_IDENT.match(name):
        raise ExportError(f"refusing to write {name!r} as a C identifier")
    return name


def _int(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "1" if v else "0"
    if not isinstance(v, (int, np.integer)):
        raise ExportError(f"refusing to write {v!r} as a C integer")
    return str(int(v))


def _array_body(values: np.ndarray, per_line: int = 20) -> str:
    vals = [str(int(v)) for v in np.asarray(values).reshape(-1).tolist()]
    if not vals:
        return "0"
    lines = [", ".join(vals[i:i + per_line]) for i in range(0, len(vals), per_line)]
    return ",\n    ".join(lines)


def _struct_value(v: Any) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f".{_ident(k)} = {_struct_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (list, tuple)):
        return "{" + ", ".join(_struct_value(x) for x in v) + "}"
    if isinstance(v, str):
        if not _C_ENUM.match(v):
            raise ExportError(f"refusing to write {v!r} as a C enumerator")
        return v
    return _int(v)


def _short(fn: str) -> str:
    parts = fn.split("_")
    if fn.startswith("mli_mov_"):
        return "mov"
    return _ident(parts[2] if len(parts) > 2 and parts[1] in ("krn", "hlp") else parts[-1])


class _Writer:
    """Builds model.c: constants, the arena, structs and the call sequence."""

    def __init__(self, prog: Program, plan: BufferPlan) -> None:
        self.p, self.plan = prog, plan
        self.decl: list[str] = []
        self.runtime: list[str] = []
        self.body: list[str] = []
        self.n_struct = 0
        self._const_tensors: dict[TensorArg, str] = {}

    def const_name(self, cid: int) -> str:
        return f"c{cid}"

    def data_expr(self, t: TensorArg, name: str) -> str:
        size = t.el_type.size
        if size not in _PTR:
            raise ExportError(f"no MLI container for {t.el_type.name}")
        ptr, ctype = _PTR[size], c_int_type(t.el_type.dtype)
        if t.storage == "scalar":
            return f"{{.capacity = 0u, .mem = {{.{_VAL[size]} = {_int(t.value)}}}}}"
        if t.storage == "null":
            return f"{{.capacity = {_int(t.capacity)}u, .mem = {{.{ptr} = 0}}}}"
        if t.storage == "const":
            return f"{{.capacity = {_int(t.capacity)}u, .mem = {{.{ptr} = ({ctype} *){self.const_name(t.ref)}}}}}"
        reg = self.p.regions[t.ref]
        if reg.kind == "arena":
            off = self.plan.offsets[t.ref] + t.offset
            return f"{{.capacity = {_int(t.capacity)}u, .mem = {{.{ptr} = ({ctype} *)MODEL_ARENA({off})}}}}"
        src = "input" if reg.kind == "input" else "output"
        self.runtime.append(f"    {name}.data.mem.{ptr} = ({ctype} *)((const uint8_t *){src} + {_int(t.offset)});")
        return f"{{.capacity = {_int(t.capacity)}u, .mem = {{.{ptr} = 0}}}}"

    def quant_expr(self, v: Any, size_key: str) -> str:
        if isinstance(v, tuple):
            cid = v[1]
            n = self.p.consts[cid].values
            ptr = "pi8" if size_key == "i8" else "pi16"
            ctype = "int8_t" if size_key == "i8" else "int16_t"
            return f"{{.capacity = {n.nbytes}u, .mem = {{.{ptr} = ({ctype} *){self.const_name(cid)}}}}}"
        return f"{{.capacity = 0u, .mem = {{.{size_key} = {_int(v)}}}}}"

    def tensor(self, t: TensorArg, role: str, fn: str) -> str:
        if t.storage in ("const", "scalar") and t in self._const_tensors:
            return self._const_tensors[t]
        self.n_struct += 1
        name = _ident(f"t{self.n_struct}_{_short(fn)}_{role}")
        rank = t.rank
        shape = ", ".join(f"{_int(s)}u" for s in t.shape) or "0u"
        stride = ", ".join(_int(s) for s in t.mem_stride) or "0"
        if t.el_type.is_sa:
            el = (f"{{.sa = {{.type = MLI_EL_PARAM_SC16_ZP16, .zero_point = {self.quant_expr(t.zero_point, 'i16')}, "
                  f".scale = {self.quant_expr(t.scale, 'i16')}, .dim = {_int(t.dim)}, "
                  f".scale_frac_bits = {self.quant_expr(t.scale_frac_bits, 'i8')}}}}}")
        else:
            el = f"{{.fx = {{.frac_bits = {_int(t.frac_bits)}}}}}"
        self.decl.append(
            f"static MODEL_STRUCT_SECTION mli_tensor {name} = {{\n    .data = {self.data_expr(t, name)},\n"
            f"    .mem_stride = {{{stride}}},\n    .shape = {{{shape}}},\n    .rank = {_int(rank)}u,\n"
            f"    .el_type = {_ident(t.el_type.c_name)},\n    .el_params = {el}\n}};")
        if t.storage in ("const", "scalar"):
            self._const_tensors[t] = name
        return name

    def arg(self, a: Any, role: str, fn: str) -> str:
        if isinstance(a, TensorArg):
            return "&" + self.tensor(a, role, fn)
        if isinstance(a, list):
            names = [self.tensor(t, f"{role}{k}", fn) for k, t in enumerate(a)]
            self.n_struct += 1
            lst = f"l{self.n_struct}_{_short(fn)}_{role}"
            self.decl.append(f"static const mli_tensor *{lst}[{len(names)}] = {{"
                             + ", ".join("&" + n for n in names) + "};")
            return lst
        if isinstance(a, LutArg):
            self.n_struct += 1
            name = f"lut{self.n_struct}"
            cid = a.data
            ctype = c_int_type(self.p.consts[cid].values.dtype)
            ptr = _PTR[self.p.consts[cid].values.dtype.itemsize]
            self.decl.append(
                f"static const mli_lut {name} = {{\n    .data = {{.capacity = {_int(a.capacity)}u, .mem = {{.{ptr} = "
                f"({ctype} *){self.const_name(cid)}}}}},\n    .type = {_ident(a.type.c_name)},\n"
                f"    .length = {_int(a.length)},\n    .in_frac_bits = {_int(a.in_frac_bits)},\n"
                f"    .out_frac_bits = {_int(a.out_frac_bits)},\n    .input_offset = {_int(a.input_offset)},\n"
                f"    .output_offset = {_int(a.output_offset)}\n}};")
            return "&" + name
        if isinstance(a, StructArg):
            self.n_struct += 1
            name = f"cfg{self.n_struct}"
            body = _struct_value(a.fields)
            if a.scratch >= 0:
                reg = self.p.regions[a.scratch]
                scratch = (f".scratch_data = {{.capacity = {reg.nbytes}u, .mem = {{.pi8 = "
                           f"(int8_t *)MODEL_ARENA({self.plan.offsets[a.scratch]})}}}}")
                body = body[:-1] + (", " if a.fields else "") + scratch + "}"
            self.decl.append(f"static const {_ident(a.c_type)} {name} = {body};")
            return "&" + name
        if isinstance(a, IntArg):
            return _int(a.value)
        raise ExportError(f"cannot write argument {a!r}")

    def call(self, k: int, c: Call, roles: Sequence[str]) -> None:
        args = [self.arg(a, roles[i] if i < len(roles) else f"arg{i}", c.name) for i, a in enumerate(c.args)]
        self.body.append(f"    /* {k}: {comment(c.layer, 60)} */")
        self.body.append(f"    st = {_ident(c.name)}({', '.join(args)});")
        self.body.append("    if (st != MLI_STATUS_OK) return (int)st;")


def _roles(name: str, n: int) -> list[str]:
    fn = capi.FUNCTIONS.get(name)
    params = list(inspect.signature(fn).parameters) if fn else []
    out = [re.sub(r"[^a-z0-9]", "", p.lower()) or f"arg{i}" for i, p in enumerate(params)]
    return out + [f"arg{i}" for i in range(len(out), n)]


def model_h(prog: Program, plan: BufferPlan) -> str:
    """model.h: sizes, I/O types and the ``model_run`` prototype.

    Args:
        prog: the traced program.
        plan: its buffer plan.

    Returns:
        The file's text.

    Raises:
        ExportError: an input or output dtype with no C container.
    """
    it, ot = c_int_type(prog.input_dtype), c_int_type(prog.output_dtype)
    return f"""/* Generated by pymli export: {comment(prog.name, 60)}. */
#ifndef PYMLI_MODEL_H_
#define PYMLI_MODEL_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {{
#endif

#define MODEL_INPUT_ELEMS {prog.input_size}
#define MODEL_OUTPUT_ELEMS {prog.output_size}
#define MODEL_ARENA_BYTES {plan.peak}
#define MODEL_CONST_BYTES {prog.const_bytes}

typedef {it} model_input_t;
typedef {ot} model_output_t;

/* Runs the network on one sample (shape {comment(str(prog.input_shape))}, output shape
 * {comment(str(prog.output_shape))}); returns 0 (MLI_STATUS_OK) or the first mli_status an MLI call returned. */
int model_run(const model_input_t *input, model_output_t *output);

#ifdef __cplusplus
}}
#endif

#endif /* PYMLI_MODEL_H_ */
"""


def model_c(prog: Program, plan: BufferPlan) -> str:
    """model.c: constants, arena, structs and ``model_run``.

    Args:
        prog: the traced program.
        plan: its buffer plan (arena offsets).

    Returns:
        The file's text.

    Raises:
        ExportError: a name that is no C identifier, or a dtype with no C container.
    """
    w = _Writer(prog, plan)
    for k, c in enumerate(prog.calls):
        w.call(k, c, _roles(c.name, len(c.args)))
    consts = []
    for c in prog.consts:
        ct = c_int_type(c.values.dtype)
        consts.append(f"/* {comment(c.label, 80)} */\nstatic MODEL_CONST_SECTION const {ct} c{c.id}"
                      f"[{max(c.values.size, 1)}] = {{\n    {_array_body(c.values)}\n}};")
    arena_words = max((plan.peak + 3) // 4, 1)
    rnd = "UP" if prog.platform.round_mode is RoundMode.UP else "CONVERGENT"
    lines = [f"/* Generated by pymli export: {comment(prog.name, 60)}.",
             f" * MLI 2.0 build options: ROUND_MODE={rnd} FULL_ACCU={'ON' if prog.platform.full_accu else 'OFF'}"
             f" AVEPOOL_16BIT_MUL={'ON' if prog.platform.avepool_16bit_mul else 'OFF'}.",
             f" * {len(prog.calls)} MLI calls, {prog.const_bytes} bytes of constants, {plan.peak} bytes of arena. */",
             '#include "model.h"', '#include "mli_api.h"', "",
             "/* Memory placement: define these (e.g. to a section attribute) to put constants, the activation",
             " * arena and the tensor structs in ARC CCM / XY memory. */",
             "#ifndef MODEL_CONST_SECTION", "#define MODEL_CONST_SECTION", "#endif",
             "#ifndef MODEL_ARENA_SECTION", "#define MODEL_ARENA_SECTION", "#endif",
             "#ifndef MODEL_STRUCT_SECTION", "#define MODEL_STRUCT_SECTION", "#endif", "",
             *([f"static MODEL_ARENA_SECTION int32_t model_arena[{arena_words}];",
                "#define MODEL_ARENA(off) ((uint8_t *)model_arena + (off))", ""] if plan.peak else []),
             *consts, "", *w.decl, "",
             "int model_run(const model_input_t *input, model_output_t *output)", "{",
             "    mli_status st;", *w.runtime, *w.body, "    (void)input;", "    (void)output;",
             "    (void)st;", "    return (int)MLI_STATUS_OK;", "}", ""]
    return "\n".join(lines)


def model_check_c(prog: Program, inputs: np.ndarray, outputs: np.ndarray) -> str:
    """model_check.c: the test vectors, a bit-exact comparison and ``--dump DIR``.

    Args:
        prog: the traced program.
        inputs: quantised test inputs ``[N, *input shape]``.
        outputs: pymli's outputs for them ``[N, *output shape]``.

    Returns:
        The file's text.
    """
    n = len(inputs)
    ins = ",\n".join("  {\n    " + _array_body(x) + "\n  }" for x in inputs)
    outs = ",\n".join("  {\n    " + _array_body(y) + "\n  }" for y in outputs)
    return f"""/* Generated by pymli export: test vectors (inputs and the outputs pymli computed). */
#include <stdio.h>
#include <string.h>
#include "model.h"

#define N_VECTORS {n}

static const model_input_t check_inputs[N_VECTORS][MODEL_INPUT_ELEMS] = {{
{ins}
}};
static const model_output_t check_outputs[N_VECTORS][MODEL_OUTPUT_ELEMS] = {{
{outs}
}};
static model_output_t result[MODEL_OUTPUT_ELEMS];

int main(int argc, char **argv)
{{
    const char *dump = NULL;
    int exact = 0;
    int k;
    for (k = 1; k < argc; k++) {{
        if (strcmp(argv[k], "--dump") == 0 && k + 1 < argc) {{
            dump = argv[++k];
        }} else {{
            fprintf(stderr, "usage: %s [--dump DIR]\\n", argv[0]);
            return 2;
        }}
    }}
    for (k = 0; k < N_VECTORS; k++) {{
        int st;
        memset(result, 0, sizeof result);
        st = model_run(check_inputs[k], result);
        if (st != 0) {{
            printf("vector %d: model_run returned mli_status %d\\n", k, st);
        }} else if (memcmp(result, check_outputs[k], sizeof result) == 0) {{
            exact++;
        }} else {{
            printf("vector %d: output differs from pymli\\n", k);
        }}
        if (dump != NULL) {{
            char path[4096];
            FILE *f;
            snprintf(path, sizeof path, "%s/out_%d.bin", dump, k);
            f = fopen(path, "wb");
            if (f == NULL || fwrite(result, 1, sizeof result, f) != sizeof result) {{
                fprintf(stderr, "cannot write %s\\n", path);
                if (f != NULL) fclose(f);
                return 2;
            }}
            fclose(f);
        }}
    }}
    printf("%d/%d vectors bit-exact\\n", exact, N_VECTORS);
    printf("peak activation memory: %ld bytes (arena; input %ld and output %ld bytes held by the caller)\\n",
           (long)MODEL_ARENA_BYTES, (long)sizeof(model_input_t) * MODEL_INPUT_ELEMS,
           (long)sizeof(model_output_t) * MODEL_OUTPUT_ELEMS);
    printf("constant memory: %ld bytes\\n", (long)MODEL_CONST_BYTES);
    return exact == N_VECTORS ? 0 : 1;
}}
"""


def cmakelists(prog: Program) -> str:
    """CMakeLists.txt: builds MLI from ``-DMLI_SRC`` with the platform's options, then ``model_check``.

    Args:
        prog: the traced program (its platform gives the MLI build options).

    Returns:
        The file's text.
    """
    p = prog.platform
    rnd = "UP" if p.round_mode is RoundMode.UP else "CONVERGENT"
    return f"""# Generated by pymli export. Build: cmake -S . -B build -DMLI_SRC=<embarc_mli 2.0 tree> && cmake --build build
cmake_minimum_required(VERSION 3.16)
project(pymli_model C CXX)

set(MLI_SRC "" CACHE PATH "MLI 2.0 source tree (embarc_mli)")
if(NOT MLI_SRC)
  message(FATAL_ERROR "configure with -DMLI_SRC=<path to the embarc_mli 2.0 source tree>")
endif()

# MLI build options of the platform pymli exported for (they change the arithmetic)
set(ROUND_MODE {rnd})
set(FULL_ACCU {'ON' if p.full_accu else 'OFF'})
set(AVEPOOL_16BIT_MUL {'ON' if p.avepool_16bit_mul else 'OFF'})
set(MLI_BUILD_REFERENCE OFF)
set(MLI_DEBUG_MODE DBG_MODE_RELEASE)
set(MLI_LIB_HOME_DIR ${{MLI_SRC}})
add_subdirectory(${{MLI_SRC}}/lib mli EXCLUDE_FROM_ALL)

add_executable(model_check model.c model_check.c)
set_target_properties(model_check PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON C_EXTENSIONS OFF
                      LINKER_LANGUAGE CXX)
if(CMAKE_C_COMPILER_ID MATCHES "GNU|Clang")
  target_compile_options(model_check PRIVATE -Wall -Wextra -Werror)
endif()
target_link_libraries(model_check PRIVATE mli)
"""


def readme(prog: Program, plan: BufferPlan, n_vectors: int, files: Iterable[str]) -> str:
    """README.md of the output folder.

    Args:
        prog: the traced program.
        plan: its buffer plan.
        n_vectors: number of test vectors in model_check.c.
        files: the names of the files written.

    Returns:
        The file's text.
    """
    return f"""# {comment(prog.name, 60)}: MLI 2.0 C program generated by pymli

Files: {', '.join(files)}.

* `model_run(input, output)` ({len(prog.calls)} MLI calls) takes {prog.input_size} `{c_int_type(prog.input_dtype)}`
  values and writes {prog.output_size} `{c_int_type(prog.output_dtype)}` values; it returns the first
  non-OK `mli_status`.
* Memory: {plan.peak} bytes of activation arena (liveness lower bound {plan.lower_bound}), {prog.const_bytes}
  bytes of constants. Define `MODEL_CONST_SECTION`, `MODEL_ARENA_SECTION` and `MODEL_STRUCT_SECTION` to place
  them (e.g. `-DMODEL_ARENA_SECTION='__attribute__((section(".Xdata")))'`).
* `model_check` runs {n_vectors} test vectors and compares every output with pymli's, bit for bit
  (`--dump DIR` also writes `out_<k>.bin`).

```sh
cmake -S . -B build -DMLI_SRC=/path/to/embarc_mli && cmake --build build && ./build/model_check
```

The MLI library must be built with the options this model was exported for (set in CMakeLists.txt):
{prog.platform.options_string().strip()}, FULL_ACCU={'ON' if prog.platform.full_accu else 'OFF'},
AVEPOOL_16BIT_MUL={'ON' if prog.platform.avepool_16bit_mul else 'OFF'}.
"""
