/* Which Python frames of a torch.profiler trace are the user's own code.
 *
 * torch.profiler names each python_function event "FILE(LINE): FUNCTION".
 * It strips from FILE the longest sys.path / site-packages prefix it knows
 * (torch/profiler/python_tracer.py, _prefix_regex), so FILE is often
 * relative: to the script's folder for the user's files ("train.py"), to
 * site-packages for libraries ("torch/nn/modules/module.py"). Frames that
 * are not functions look like "<built-in method ...>" or "nn.Module: X_0".
 *
 * A frame is user code when:
 *   - its name parses as FILE(LINE): FUNCTION with LINE >= 1, FILE not
 *     starting with '<' (<built-in ...>, <frozen ...>, <string>);
 *   - FILE resolves to a path under the project root: an absolute FILE must
 *     lie under the root (also after resolving symbolic links); a relative
 *     FILE must name an existing file root/FILE, or else exactly one .py file
 *     under the root whose path ends with "/FILE" (the script was run from a
 *     sub-folder); the walk skips hidden folders, virtual environments,
 *     __pycache__, node_modules, site-packages, dist-packages;
 *   - neither FILE nor the resolved path has a site-packages or
 *     dist-packages component, or a `torch` folder component.
 * Decisions are cached by name: each distinct name costs one parse and at
 * most a few stat calls. */
#ifndef ADVISE_TORCH_USER_CODE_H
#define ADVISE_TORCH_USER_CODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    char *path;        /* relative to the project root, '/'-separated */
    uint32_t line;     /* the function's first line (see torch_import.h) */
    char *function;
} TorchFrame;

typedef struct TorchUserCode TorchUserCode;

/* NULL with *error when the root cannot be resolved or memory runs out. */
TorchUserCode *torch_user_code_new(const char *project_root, char **error);
void torch_user_code_free(TorchUserCode *uc);

/* The id (>= 0) of the user frame that a python_function name denotes (the
 * same id for the same name), or -1 when it is not user code. -2 when out
 * of memory. */
int torch_user_code_lookup(TorchUserCode *uc, const char *name);
const TorchFrame *torch_user_code_frame(const TorchUserCode *uc, int id);
/* How many user frames were found so far (ids are 0 .. count-1) */
size_t torch_user_code_frame_count(const TorchUserCode *uc);

/* Splits "FILE(LINE): FUNCTION"; false when name has another shape. The
 * pointers it fills point into name (file is not terminated: file_len). */
bool torch_frame_parse(const char *name, const char **file, size_t *file_len, uint32_t *line,
                       const char **function);

#endif
