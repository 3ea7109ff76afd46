/* The oldest PyTorch a project says it supports, read from its dependency
 * files: advice that needs a newer release (a keyword that older ones
 * reject) stands down there. */
#ifndef ADVISE_RULES_PYTHON_TORCH_FLOOR_H
#define ADVISE_RULES_PYTHON_TORCH_FLOOR_H

#include <stdbool.h>
#include <stddef.h>

/* A release as major * 1000 + minor (1.8 -> 1008, 2.4 -> 2004). */
typedef int TorchVersion;
#define TORCH_VERSION(major, minor) ((major) * 1000 + (minor))

/* The lowest torch (or conda's pytorch) release that a dependency list in
 * text allows: the version of each `>=`, `==`, `~=`, `===`, `>` or conda
 * `=` requirement (`torch>=1.8.0`, `"torch==1.7.1"`, `- pytorch=1.10`);
 * false when text declares none (an upper bound alone declares none). */
bool torch_floor_in_text(const char *text, size_t length, TorchVersion *floor);

/* The floor declared by the project of the source file at path: the
 * lowest over requirements*.txt, pyproject.toml, setup.py, setup.cfg and
 * environment.yml of the nearest folder (the file's own, then its
 * parents, up to the one holding .git, at most 8 levels) that declares
 * one. False when none does, or path is NULL. Reads only those files. */
bool torch_floor_of_project(const char *path, TorchVersion *floor);

#endif
