// The person at the keyboard: turns a seed into a stream of LSP content
// changes on a text held as lines, the way people edit. Statements typed a
// character at a time (with typos made and fixed), lines deleted, whole
// functions pasted, runs of edits undone, statements left half-typed (a syntax
// error) for a while and then undone. Positions are UTF-16 code units, as LSP
// counts them by default; some typed comments hold non-ASCII text, one
// character of it outside the BMP, so the two units differ on those lines.

import { mulberry32 } from '../gen_torch_file.mjs';

const PYTHON = {
    statements: [
        ['x = x.to(device)'],
        ['loss_value = loss.item()'],
        ['torch.cuda.synchronize()'],
        ['print(f"step {step}: {loss.item():.4f}")'],
        ['total_loss += loss'],
        ['history.append(out)'],
        ['buffer = torch.zeros(batch_size, 512).cuda()'],
        ['idx = torch.arange(n, device="cuda")'],
        ['if step % 100 == 0:', '    print("step", step, loss.detach().cpu())'],
        ['out = model(x.float())'],
        ['mask = (x > 0).cpu().numpy()'],
        ['# note: ∑ of the losses → logged once per epoch 😀'],
        ['for i in range(len(batch)):', '    acc += batch[i].sum().item()'],
        ['state = torch.load(path)'],
        ['loss.backward(retain_graph=True)'],
        ['with torch.no_grad():', '    preds = model(x).argmax(dim=-1)'],
    ],
    pasted: (k) => [
        `def pasted_helper_${k}(model, loader, device):`,
        '    model.train()',
        '    total = 0.0',
        '    for x, y in loader:',
        '        x = x.to(device)',
        '        out = model(x)',
        '        loss = out.mean()',
        '        loss.backward()',
        '        total += loss.item()',
        '    return total',
        '',
        '',
    ],
    broken: ['loss = criterion(out, target', 'x = torch.cat([a, b', 'if step % 10 == 0', 'def half_typed(x, y'],
    indentUnit: '    ',
    // a line after which a statement of the same indentation can go: a whole
    // statement inside a block, not a continuation, a decorator or a header
    statementLine(lines, i) {
        const t = lines[i], prev = i > 0 ? lines[i - 1].trimEnd() : '';
        if (!/^ {4,}\S/.test(t) || /^\s*(#|@|def |class |elif |else|except|finally|"""|''')/.test(t)) return false;
        if (/[,(\[{\\:+=]$/.test(t.trimEnd()) || /[,(\[{\\]$/.test(prev) || /"""|'''/.test(t)) return false;
        const next = lines[i + 1] ?? '';
        return !/^\s*[)\]}]/.test(next);
    },
    topLevelBoundary: (lines, i) => /^(def|class) /.test(lines[i]) && (i === 0 || lines[i - 1].trim() === ''),
};

const CUDA = {
    statements: [
        ['__syncthreads();'],
        ['float v = a[threadIdx.x * n];'],
        ['if (threadIdx.x < 16) __syncthreads();'],
        ['cudaMemcpy(d_a, h_a, bytes, cudaMemcpyHostToDevice);'],
        ['cudaDeviceSynchronize();'],
        ['int idx = blockIdx.x * blockDim.x + threadIdx.x;'],
        ['// ∑ of the partial sums → shared memory 😀'],
        ['for (int k = 0; k < n; ++k) acc += a[k * n + idx];'],
        ['if (idx < n) {', '    out[idx] = in[idx * stride];', '}'],
        ['cudaMalloc(&d_tmp, bytes);'],
    ],
    pasted: (k) => [
        `__global__ void pasted_kernel_${k}(const float* a, float* b, int n) {`,
        '    int i = blockIdx.x * blockDim.x + threadIdx.x;',
        '    if (i < n) b[i] = a[i * n] + a[i];',
        '}',
        '',
    ],
    broken: ['float w = a[threadIdx.x', 'if (idx < n', 'cudaMemcpy(d_a, h_a, bytes'],
    indentUnit: '    ',
    statementLine(lines, i) {
        const t = lines[i].trimEnd(), prev = i > 0 ? lines[i - 1].trimEnd() : '';
        if (!/^ {4,}\S/.test(t) || !t.endsWith(';') || /^\s*(for|#|\/\/)/.test(t)) return false;
        return /[;{}]$/.test(prev) || prev === '' || /^\s*\/\//.test(prev);
    },
    topLevelBoundary: (lines, i) => /^(__global__|static|void|int|template|__device__)\b/.test(lines[i]) &&
        i > 0 && lines[i - 1].trim() === '',
};

export const LANGUAGES = { python: PYTHON, cuda: CUDA };

/** Applies one change to `lines` and returns its inverse (the change that undoes it). */
export function applyChange(lines, change) {
    const { start, end } = change.range;
    const head = lines[start.line].slice(0, start.character), tail = lines[end.line].slice(end.character);
    const removed = start.line === end.line
        ? lines[start.line].slice(start.character, end.character)
        : [lines[start.line].slice(start.character), ...lines.slice(start.line + 1, end.line),
           lines[end.line].slice(0, end.character)].join('\n');
    const inserted = change.text.split('\n');
    const endLine = start.line + inserted.length - 1;
    const endCharacter = inserted.length === 1 ? start.character + change.text.length : inserted[inserted.length - 1].length;
    inserted[0] = head + inserted[0];
    inserted[inserted.length - 1] += tail;
    lines.splice(start.line, end.line - start.line + 1, ...inserted);
    return { range: { start, end: { line: endLine, character: endCharacter } }, text: removed };
}

const at = (line, character) => ({ line, character });

/** A typist over `lines` (edited in place); next() gives the next change, or
 * a { pause } marker between actions, where an editor would send requests. */
export class Typist {
    constructor(lines, language, seed) {
        this.lines = lines;
        this.lang = LANGUAGES[language];
        this.rnd = mulberry32(seed);
        this.undo = []; // inverses, newest last
        this.queue = []; // changes planned by the current action
        this.cursor = at(0, 0);
        this.targetLines = lines.length; // the file's size is held near its start (see #plan)
        this.pasted = 0;
        this.brokenDepth = null; // a half-typed statement: the undo depth before it, to go back to
        this.actionsSinceBroken = 0;
    }

    #pick(xs) { return xs[Math.floor(this.rnd() * xs.length)]; }
    #int(lo, hi) { return lo + Math.floor(this.rnd() * (hi - lo + 1)); }

    #findLine(test, tries = 400) {
        for (let k = 0; k < tries; k++) {
            const i = Math.floor(this.rnd() * this.lines.length);
            if (test(this.lines, i)) return i;
        }
        return -1;
    }

    /** the changes that type `text` one character at a time from `pos`
     * (a newline is one keystroke; a surrogate pair is one character) */
    #typing(pos, text, typos) {
        const changes = [];
        let { line, character } = pos;
        for (const ch of text) {
            if (typos && ch !== '\n' && this.rnd() < 0.04) { // a wrong key, seen and erased
                changes.push({ range: { start: at(line, character), end: at(line, character) }, text: 'q' });
                changes.push({ range: { start: at(line, character), end: at(line, character + 1) }, text: '' });
            }
            changes.push({ range: { start: at(line, character), end: at(line, character) }, text: ch });
            if (ch === '\n') { line++; character = 0; } else character += ch.length;
        }
        return changes;
    }

    #plan() {
        const r = this.rnd();
        this.actionsSinceBroken++;
        if (this.brokenDepth !== null && this.actionsSinceBroken > 3) {
            // the half-typed statement goes again, with what came after it (undo is a stack)
            const n = Math.max(0, this.undo.length - this.brokenDepth);
            this.brokenDepth = null;
            if (n) return this.#undoPlan(n);
        }
        // a long session would otherwise grow the file without end (and the
        // server's memory with it, which is not a leak): past 3% more lines
        // than at the start the person removes what they added (pasted
        // functions, then their latest edits), so that the file's own code,
        // and the findings in it, stay
        const size = this.lines.length / this.targetLines;
        if (size > 1.03) {
            if (this.lines.some((l) => /^(def pasted_helper_|__global__ void pasted_kernel_)/.test(l))) return this.#deletePasted();
            if (this.undo.length) return this.#undoPlan(this.#int(1, Math.min(this.undo.length, 40)));
            return this.#deleteLine();
        }
        if (size < 0.97) return r < 0.2 ? this.#paste() : this.#typeStatement(false);
        if (r < 0.45) return this.#typeStatement(false);
        if (r < 0.55 && this.brokenDepth === null) return this.#typeStatement(true);
        if (r < 0.80 && this.undo.length) return this.#undoPlan(this.#int(1, Math.min(this.undo.length, 40)));
        if (r < 0.84) return this.#deleteLine();
        if (r < 0.90) return this.#paste();
        return this.#typeStatement(false);
    }

    #typeStatement(broken) {
        const i = this.#findLine(this.lang.statementLine);
        if (i < 0) return [];
        const indent = this.lines[i].match(/^\s*/)[0];
        const body = broken ? [this.#pick(this.lang.broken)] : this.#pick(this.lang.statements);
        const text = body.map((l) => '\n' + indent + l).join('');
        if (broken) {
            this.brokenDepth = this.undo.length;
            this.actionsSinceBroken = 0;
        }
        return this.#typing(at(i, this.lines[i].length), text, true);
    }

    #deleteLine() {
        const i = this.#findLine((lines, k) => this.lang.statementLine(lines, k) && k + 1 < lines.length &&
                                 lines[k + 1].match(/^\s*/)[0] === lines[k].match(/^\s*/)[0] &&
                                 k > 0 && lines[k - 1].match(/^\s*/)[0] === lines[k].match(/^\s*/)[0]);
        if (i < 0) return [];
        return [{ range: { start: at(i, 0), end: at(i + 1, 0) }, text: '' }];
    }

    /** removes a function pasted earlier (its lines up to the blank lines after it) */
    #deletePasted() {
        const first = this.lines.findIndex((l) => /^(def pasted_helper_|__global__ void pasted_kernel_)/.test(l));
        if (first < 0) return this.#deleteLine();
        let end = first + 1;
        while (end < this.lines.length && this.lines[end].trim() !== '') end++;
        while (end < this.lines.length && this.lines[end].trim() === '') end++;
        return [{ range: { start: at(first, 0), end: at(end, 0) }, text: '' }];
    }

    #paste() {
        const i = this.#findLine(this.lang.topLevelBoundary);
        if (i < 0) return [];
        const text = this.lang.pasted(++this.pasted).join('\n') + '\n';
        return [{ range: { start: at(i, 0), end: at(i, 0) }, text }];
    }

    #undoPlan(n) {
        return Array.from({ length: n }, () => 'undo');
    }

    /** the next change (applied to lines already), or { pause: true } between actions */
    next() {
        while (!this.queue.length) {
            this.queue = this.#plan();
            if (this.queue.length) { this.queue.push('pause'); break; }
        }
        const item = this.queue.shift();
        if (item === 'pause') return { pause: true };
        let change = item;
        if (item === 'undo') {
            if (!this.undo.length) return this.next();
            change = this.undo.pop();
            applyChange(this.lines, change);
        } else {
            this.undo.push(applyChange(this.lines, change));
            if (this.undo.length > 2000) { // the oldest go, as an editor's undo history forgets
                this.undo.splice(0, 1000);
                if (this.brokenDepth !== null) this.brokenDepth = Math.max(0, this.brokenDepth - 1000);
            }
        }
        const end = change.text.split('\n');
        this.cursor = end.length === 1 ? at(change.range.start.line, change.range.start.character + change.text.length)
                                       : at(change.range.start.line + end.length - 1, end[end.length - 1].length);
        return { change };
    }
}
