;;; advise.el --- Eglot support and ranked findings for the advise GPU advisor  -*- lexical-binding: t -*-

;; Author: the advise authors
;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9") (jsonrpc "1.0.14"))
;; Keywords: languages, tools, processes

;; This file is not part of GNU Emacs.

;;; Commentary:

;; advise is a GPU optimization advisor: `advise server' is a language
;; server for PyTorch programs and CUDA C++.  This package
;;
;; - registers `advise server' with Eglot for `python-mode', `c-mode',
;;   `c++-mode' and `cuda-mode' (and the tree-sitter modes of Emacs 29),
;;   so that M-x eglot (or `eglot-ensure') in such a buffer starts it: its
;;   diagnostics appear through Flymake, its quick fixes through
;;   `eglot-code-actions', its hover through ElDoc;
;; - adds M-x advise-findings: the ranked findings of the project (advise's
;;   own request `advise/findings'), costliest first, in a
;;   `tabulated-list-mode' buffer where RET visits a finding.
;;
;; Setup (Debian's elpa-eglot on Emacs 28, or the Eglot of Emacs 29+):
;;
;;   (add-to-list 'load-path "/path/to/advise/editors/emacs")
;;   (require 'advise)
;;   (add-hook 'python-mode-hook #'eglot-ensure)
;;
;; with `advise' on `exec-path' (else set `advise-program').  Settings (see
;; docs/lsp.md, "Settings") go in `advise-settings' (sent as
;; initializationOptions) or in `eglot-workspace-configuration' under the
;; key :advise.

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'project)
(require 'tabulated-list)

(defgroup advise nil
  "The advise GPU optimization advisor."
  :group 'tools
  :prefix "advise-")

(defcustom advise-program "advise"
  "The advise binary: a name looked up on the variable `exec-path', or a file name."
  :type 'string)

(defcustom advise-server-args '("server")
  "Arguments that make `advise-program' a language server."
  :type '(repeat string))

(defcustom advise-settings nil
  "Settings of the advise server, a plist such as (:profileDir \"prof\").
Sent as initializationOptions; see docs/lsp.md for the keys."
  :type 'plist)

(defcustom advise-findings-timeout 120
  "Seconds to wait for the answer to `advise/findings'."
  :type 'number)

;;;; The server

(defclass advise-eglot-server (eglot-lsp-server) ()
  :documentation "An Eglot connection to `advise server'.")

(cl-defmethod eglot-initialization-options ((_server advise-eglot-server))
  "The `advise-settings', sent as initializationOptions."
  (or advise-settings (make-hash-table)))

(defun advise--contact (&optional _interactive _project)
  "The Eglot contact of the advise server."
  (unless (or (file-executable-p advise-program)
              (executable-find advise-program))
    (user-error "advise: the language server binary `%s' was not found; install advise or set `advise-program'"
                advise-program))
  `(advise-eglot-server ,advise-program ,@advise-server-args))

(defun advise--major-modes ()
  "The major modes advise serves, with their LSP language ids."
  (let ((modes '((python-mode :language-id "python")
                 (python-ts-mode :language-id "python")
                 (c-mode :language-id "c")
                 (c-ts-mode :language-id "c")
                 (c++-mode :language-id "cpp")
                 (c++-ts-mode :language-id "cpp")
                 (cuda-mode :language-id "cuda"))))
    (cl-remove-if-not (lambda (spec)
                        (or (memq (car spec) '(python-mode c-mode c++-mode))
                            (fboundp (car spec))))
                      modes)))

(defun advise--our-entry-p (entry)
  "Non-nil when ENTRY of `eglot-server-programs' is advise's."
  (eq (cdr-safe entry) #'advise--contact))

;;;###autoload
(defun advise-eglot-register ()
  "Put advise first in `eglot-server-programs' for its major modes.
Runs when advise.el loads, and again when `cuda-mode' loads."
  (interactive)
  (setq eglot-server-programs
        (cons (cons (advise--major-modes) #'advise--contact)
              (cl-remove-if #'advise--our-entry-p eglot-server-programs))))

(advise-eglot-register)
(with-eval-after-load 'cuda-mode (advise-eglot-register))

(defun advise--server (&optional noerror)
  "The advise server of the current buffer or project.
Signals a `user-error' when there is none, unless NOERROR."
  (let* ((current (eglot-current-server))
         (project (project-current))
         (servers (and project (gethash project eglot--servers-by-project))))
    (or (and current (cl-typep current 'advise-eglot-server) current)
        (cl-find-if (lambda (s) (cl-typep s 'advise-eglot-server)) servers)
        current
        (car servers)
        (unless noerror
          (user-error "advise: no advise server runs for this project; open a Python or CUDA file and M-x eglot")))))

(defun advise--uri-to-path (uri)
  "The file name of URI."
  (if (fboundp 'eglot-uri-to-path)
      (eglot-uri-to-path uri)
    (eglot--uri-to-path uri)))

;;;; Ranked findings

(defun advise--format-seconds (s)
  "S seconds as \"690 µs\", \"85.1 ms\" or \"1.25 s\"; \"-\" for none."
  (cond ((not (and (numberp s) (> s 0))) "-")
        ((< s 999.5e-6) (format "%.3g µs" (* s 1e6)))
        ((< s 0.9995) (format "%.3g ms" (* s 1e3)))
        (t (format "%.3g s" s))))

(defun advise--rank (findings)
  "FINDINGS (a vector of plists) as a list ranked by cost, highest first.
Findings of equal cost keep the server's order."
  (let ((i -1))
    (mapcar #'cdr
            (sort (mapcar (lambda (f) (cons (cl-incf i) f)) (append findings nil))
                  (lambda (a b)
                    (let ((ca (or (plist-get (cdr a) :cost_seconds) 0))
                          (cb (or (plist-get (cdr b) :cost_seconds) 0)))
                      (if (= ca cb) (< (car a) (car b)) (> ca cb))))))))

(defun advise--first-line (s)
  "The first line of S."
  (car (split-string (or s "") "\n")))

(defun advise--severity-face (severity)
  "The face of an LSP SEVERITY."
  (pcase severity (1 'error) (2 'warning) (3 'success) (_ 'shadow)))

(defvar-local advise--findings-server nil
  "The server whose findings this buffer lists.")
(defvar-local advise--findings-root nil
  "The project root of the findings listed.")

(defun advise--entries (findings root)
  "Tabulated-list entries for the ranked FINDINGS, file names relative to ROOT."
  (let ((rank 0))
    (mapcar
     (lambda (f)
       (let* ((path (advise--uri-to-path (plist-get f :uri)))
              (start (plist-get (plist-get f :range) :start))
              (line (1+ (or (plist-get start :line) 0)))
              (file (if root (file-relative-name path root) path))
              (code (format "%s" (or (plist-get f :code) "?"))))
         (cl-incf rank)
         (list (list :rank rank :path path :line line
                     :character (or (plist-get start :character) 0) :finding f)
               (vector (number-to-string rank)
                       (advise--format-seconds (plist-get f :cost_seconds))
                       (propertize code 'face (advise--severity-face (plist-get f :severity)))
                       (format "%s:%d" file line)
                       (advise--first-line (plist-get f :message))))))
     findings)))

(defun advise--sort-rank (a b)
  "Tabulated-list predicate: entry A ranks before B."
  (< (plist-get (car a) :rank) (plist-get (car b) :rank)))

(defun advise--sort-cost (a b)
  "Tabulated-list predicate: entry A costs more than B."
  (> (or (plist-get (plist-get (car a) :finding) :cost_seconds) 0)
     (or (plist-get (plist-get (car b) :finding) :cost_seconds) 0)))

(defvar advise-findings-mode-map
  (let ((map (make-sparse-keymap)))
    (set-keymap-parent map tabulated-list-mode-map)
    (define-key map (kbd "RET") #'advise-findings-visit)
    (define-key map (kbd "o") #'advise-findings-visit-other-window)
    map)
  "Keymap of `advise-findings-mode'.")

(define-derived-mode advise-findings-mode tabulated-list-mode "advise findings"
  "The findings of a project, ranked by cost (`advise/findings').
\\<advise-findings-mode-map>\\[advise-findings-visit] visits a finding, \\[revert-buffer] asks again."
  (setq tabulated-list-format
        [("#" 4 advise--sort-rank :right-align t)
         ("Cost" 9 advise--sort-cost :right-align t)
         ("Code" 6 t)
         ("Location" 36 t)
         ("Message" 0 nil)])
  (setq tabulated-list-sort-key nil)
  (setq tabulated-list-padding 1)
  (add-hook 'tabulated-list-revert-hook #'advise--findings-request nil t)
  (tabulated-list-init-header))

(defun advise--findings-fill (buffer findings)
  "Show the ranked FINDINGS in BUFFER."
  (when (buffer-live-p buffer)
    (with-current-buffer buffer
      (setq tabulated-list-entries (advise--entries (advise--rank findings) advise--findings-root))
      (tabulated-list-print t)
      (message "advise: %d finding%s, ranked by cost" (length tabulated-list-entries)
               (if (= (length tabulated-list-entries) 1) "" "s")))))

(defun advise--findings-request ()
  "Ask the buffer's server for the findings again (asynchronously)."
  (let ((buffer (current-buffer))
        (server advise--findings-server))
    (unless (and server (jsonrpc-running-p server))
      (user-error "advise: the advise server of this list is gone; run M-x advise-findings again"))
    (jsonrpc-async-request
     server :advise/findings (make-hash-table)
     :success-fn (lambda (result) (advise--findings-fill buffer result))
     :error-fn (lambda (err)
                 (message "advise: advise/findings failed: %s" (plist-get err :message)))
     :timeout advise-findings-timeout
     :timeout-fn (lambda () (message "advise: advise/findings timed out")))))

;;;###autoload
(defun advise-findings ()
  "List the project's findings, ranked by cost, in a `tabulated-list-mode' buffer.
Asks the advise server of the current project (`advise/findings')."
  (interactive)
  (let* ((server (advise--server))
         (root (let ((p (eglot--project server))) (and p (expand-file-name (project-root p)))))
         (buffer (get-buffer-create
                  (format "*advise findings: %s*"
                          (if root (file-name-nondirectory (directory-file-name root)) "?")))))
    (with-current-buffer buffer
      (advise-findings-mode)
      (setq advise--findings-server server
            advise--findings-root root
            default-directory (or root default-directory)
            tabulated-list-entries nil)
      (tabulated-list-print)
      (advise--findings-request))
    (pop-to-buffer buffer)
    buffer))

(defun advise--visit (entry other-window)
  "Visit the finding of ENTRY, in another window when OTHER-WINDOW."
  (unless entry (user-error "advise: no finding on this line"))
  (funcall (if other-window #'find-file-other-window #'find-file) (plist-get entry :path))
  (goto-char (point-min))
  (forward-line (1- (plist-get entry :line)))
  (let ((col (plist-get entry :character)))
    (if (and (boundp 'eglot-move-to-column-function) eglot-move-to-column-function)
        (funcall eglot-move-to-column-function col)
      (move-to-column col))))

(defun advise-findings-visit ()
  "Visit the finding on this line."
  (interactive)
  (advise--visit (tabulated-list-get-id) nil))

(defun advise-findings-visit-other-window ()
  "Visit the finding on this line in another window."
  (interactive)
  (advise--visit (tabulated-list-get-id) t))

(cl-defmethod eglot-handle-notification
  ((server advise-eglot-server) (_method (eql advise/profileChanged)) &key &allow-other-keys)
  "The profiles changed: ask again for the findings listed from SERVER."
  (dolist (buffer (buffer-list))
    (with-current-buffer buffer
      (when (and (derived-mode-p 'advise-findings-mode) (eq advise--findings-server server))
        (advise--findings-request)))))

(provide 'advise)
;;; advise.el ends here
