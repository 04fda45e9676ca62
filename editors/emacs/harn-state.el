;;; harn-state.el --- Harn agent state in Emacs, through harn-ls and eglot  -*- lexical-binding: t; -*-

;; Version: 0.1.0
;; Package-Requires: ((emacs "28.1") (eglot "1.9"))
;; Keywords: tools, languages
;; SPDX-License-Identifier: MIT

;;; Commentary:

;; harn-ls (`harn-ls serve') shows and steers the on-disk state of Harn agent projects.
;; This package connects it to Emacs through eglot:
;;
;; - State files (SKILL.md, and the JSON / JSONL files under .harn/ and .burin/) open in
;;   `harn-state-file-mode' and are managed by harn-ls: its problems show through flymake,
;;   and `eglot-code-actions' on a pending proposal's line of the pattern-learning log
;;   offers Accept / Reject.
;; - `harn-state:' documents (the index, runs, facts, proposals, recall results, ...) are
;;   fetched with `workspace/textDocumentContent' (LSP 3.18) into read-only buffers whose
;;   links (`harn-state:' and `file:' targets) are buttons; the server's refresh requests
;;   fetch them again.  In a proposal document `harn-state-code-actions' (`a') offers the
;;   server's Accept / Reject / Compare actions.
;; - `harn-state-index', `harn-state-recall', `harn-state-open', `harn-state-hover'
;;   (harn-ls's hover for the code at point, in any buffer of the project: a source file
;;   usually has its own language server, and eglot runs one server per buffer).
;;
;; Set-up:
;;   (add-to-list 'load-path "/path/to/harn-ls/editors/emacs")
;;   (require 'harn-state)
;;   (harn-state-setup)
;;
;; Each Harn project (the nearest folder upward with a harn.toml, else with a .harn/
;; folder) gets its own server; `harn-state-server-command' and `harn-state-settings'
;; configure it.
;;
;; `harn-state-settings' is a plist of the server's harnState.* settings, nested by their
;; dots (facts.minConfidence is (:facts (:minConfidence 0.5))), sent as initializationOptions.
;; eglot answers the server's workspace/configuration requests from
;; `eglot-workspace-configuration' (:harnState (...)), per folder: a resource setting may
;; differ per folder, an application one (hitl.reviewer) is taken from the unscoped answer
;; only.  The settings, written from the VS Code extension's schema
;; (scripts/settings_docs.py; a test fails when they differ):
;;
;; settings:begin
;;   setting                  type             default           scope
;;   harnPath                 string           "harn"            machine-overridable
;;   projectRoots             array of string  []                resource
;;   skillRoot                string           ".claude/skills"  resource
;;   probes.timeoutSeconds    number           30                resource
;;   probes.storeFacts        boolean          true              resource
;;   facts.minConfidence      number           0                 resource
;;   codeLens.facts           boolean          true              resource
;;   codeLens.checkpoints     boolean          true              resource
;;   transcripts.showPrivate  boolean          false             resource
;;   harnEnv                  object           {}                resource
;;   hitl.reviewer            string           ""                application
;; settings:end

;;; Code:

(require 'cl-lib)
(require 'eglot)
(require 'jsonrpc)
(require 'project)
(require 'subr-x)
(require 'url-util)

(defgroup harn-state nil
  "Harn agent state through harn-ls."
  :group 'tools
  :prefix "harn-state-")

(defcustom harn-state-server-command '("harn-ls" "serve")
  "The harn-ls server command, a program and its arguments."
  :type '(repeat string))

(defcustom harn-state-settings nil
  "`harnState.*' settings sent to the server, a plist such as
\(:harnPath \"/usr/local/bin/harn\" :facts (:minConfidence 0.5)).
The keys: :harnPath, :skillRoot, :probes (:timeoutSeconds :storeFacts),
:facts (:minConfidence), :codeLens (:facts :checkpoints),
:transcripts (:showPrivate), :hitl (:reviewer), :projectRoots and :harnEnv
\(Harn's location variables, such as
\(:HARN_EVENT_LOG_SQLITE_PATH \"state/events.sqlite\")).
harn-ls's README gives each one's default."
  :type 'plist)

(defcustom harn-state-trusted nil
  "Sent as `workspaceTrusted' when non-nil: t or :json-false.
nil lets the server decide."
  :type '(choice (const :tag "Server default" nil) (const :tag "Trusted" t) (const :tag "Untrusted" :json-false)))

(defconst harn-state-scheme "harn-state")

(defvar eglot-lsp-context) ; eglot binds it (dynamically) while it looks for a buffer's project

(defconst harn-state-file-patterns
  '("/SKILL\\.md\\'" "/\\.harn/.*\\.jsonl?\\'" "/\\.burin/.*\\.jsonl\\'")
  "File names that are Harn state files.
`harn-state-setup' adds them to `auto-mode-alist'.")

;;;; Projects and servers

(defclass harn-state-server (eglot-lsp-server) ()
  :documentation "harn-ls, one per Harn project.")

(defvar harn-state--status (make-hash-table :test #'eq :weakness 'key)
  "Server -> the last `harn/status' it sent (a plist).")

(defun harn-state-project-root (&optional dir)
  "The Harn project holding DIR.
That is the nearest folder upward with a harn.toml, else with a .harn/
folder (except the home folder, whose ~/.harn is Harn's user-level one)."
  (let* ((dir (expand-file-name (or dir default-directory)))
         (toml (locate-dominating-file dir "harn.toml"))
         (home (file-name-as-directory (expand-file-name "~"))))
    (if toml
        (directory-file-name (expand-file-name toml))
      (let ((state (locate-dominating-file
                    dir (lambda (d)
                          (and (not (string= (file-name-as-directory (expand-file-name d)) home))
                               (file-directory-p (expand-file-name ".harn" d)))))))
        (and state (directory-file-name (expand-file-name state)))))))

(defun harn-state--project-find (dir)
  "The project of a Harn buffer in DIR, for eglot only (`eglot-lsp-context').
It is its Harn project, so that every Harn project gets its own server
whatever version control says."
  (when (and (bound-and-true-p eglot-lsp-context) (derived-mode-p 'harn-state-file-mode))
    (let ((root (harn-state-project-root dir)))
      (and root (cons 'transient (file-name-as-directory root))))))

(defun harn-state--contact (&optional _interactive)
  "The server contact for `eglot-server-programs'."
  (cons 'harn-state-server harn-state-server-command))

(defun harn-state--server-for-root (root &optional start)
  "The live harn-ls of the Harn project ROOT.
When there is none, START non-nil starts one."
  (with-temp-buffer
    (setq default-directory (file-name-as-directory root))
    (delay-mode-hooks (harn-state-file-mode))
    (let ((server (eglot-current-server)))
      (if (and server (jsonrpc-running-p server))
          server
        (when start
          (eglot '(harn-state-file-mode) (let ((eglot-lsp-context t)) (project-current)) 'harn-state-server
                 harn-state-server-command "harn-state")
          ;; eglot stops waiting after `eglot-sync-connect' seconds and goes on connecting in the
          ;; background; the caller needs the server, so wait for it (up to `eglot-connect-timeout')
          (let ((deadline (+ (float-time) (if (numberp eglot-connect-timeout) eglot-connect-timeout 30)))
                (server nil))
            (while (and (not (setq server (eglot-current-server))) (< (float-time) deadline))
              (accept-process-output nil 0.1))
            (and server (jsonrpc-running-p server) server)))))))

(defvar-local harn-state--server nil "The server a `harn-state:' document came from.")
(defvar-local harn-state--uri nil "The `harn-state:' URI of this document buffer.")

(defun harn-state-current-server (&optional start)
  "The harn-ls of the current buffer: its document's, else its project's.
START non-nil starts the project's when none runs."
  (or (and harn-state--server (jsonrpc-running-p harn-state--server) harn-state--server)
      (let ((root (harn-state-project-root)))
        (unless root
          (user-error "No Harn project here (no harn.toml or .harn/ above %s)" default-directory))
        (or (harn-state--server-for-root root start)
            (user-error "harn-ls is not running for %s" root)))))

(defun harn-state--connect ()
  "In a state file: start the project's harn-ls when none runs.
eglot then manages the buffer."
  (when (and buffer-file-name (harn-state-project-root))
    (condition-case err
        (harn-state-current-server t)
      (error (message "harn-state: %s" (error-message-string err))))))

;;;###autoload
(define-derived-mode harn-state-file-mode text-mode "Harn-State"
  "A Harn state file (SKILL.md, an event log), managed by harn-ls through eglot."
  (add-hook 'after-change-major-mode-hook #'harn-state--connect nil t))

;;;; What the server sends

(cl-defmethod eglot-client-capabilities ((_server harn-state-server))
  "Eglot's capabilities, plus `harn-state:' documents and window/showDocument."
  (let* ((caps (copy-tree (cl-call-next-method)))
         (workspace (plist-put (plist-get caps :workspace) :textDocumentContent '(:dynamicRegistration :json-false)))
         (window (plist-put (plist-get caps :window) :showDocument '(:support t))))
    (plist-put (plist-put caps :workspace workspace) :window window)))

(cl-defmethod eglot-initialization-options ((_server harn-state-server))
  (let ((options (list :settings (list :harnState (or harn-state-settings (make-hash-table))))))
    (if harn-state-trusted (plist-put options :workspaceTrusted harn-state-trusted) options)))

(cl-defmethod eglot-handle-notification ((server harn-state-server) (_method (eql harn/status)) &rest params)
  (puthash server params harn-state--status))

(cl-defmethod eglot-handle-notification ((_server harn-state-server) (_method (eql harn/treeChanged)) &rest _params)
  "Nothing: Emacs shows no tree view.")

(cl-defmethod eglot-handle-notification ((_server harn-state-server) (_method (eql harn/hitlArrived)) &key requests
                                         &allow-other-keys)
  (message "harn-state: %d request(s) wait for you (M-x harn-state-open RET harn-state:/hitl.md)" (length requests)))

(cl-defmethod eglot-handle-request ((server harn-state-server) (_method (eql workspace/textDocumentContent/refresh))
                                    &key uri &allow-other-keys)
  (dolist (buf (buffer-list))
    (with-current-buffer buf
      (when (and harn-state--uri (equal harn-state--uri uri) (eq harn-state--server server))
        (harn-state--fetch buf))))
  nil) ; JSON null

(cl-defmethod eglot-handle-request ((server harn-state-server) (_method (eql window/showDocument))
                                    &key uri selection &allow-other-keys)
  (condition-case nil
      (progn (harn-state-open-target uri server selection) '(:success t))
    (error '(:success :json-false))))

(defun harn-state-status ()
  "Say what the server last reported about the current project (`harn/status')."
  (interactive)
  (let* ((st (gethash (harn-state-current-server) harn-state--status))
         (counts (plist-get st :counts)))
    (message "harn %s: %s · %s problems" (plist-get st :root)
             (mapconcat (lambda (k) (format "%s %s" (plist-get counts k) (substring (symbol-name k) 1)))
                        (cl-remove-if-not (lambda (k) (plist-get counts k)) '(:facts :proposals :runs))
                        " · ")
             (plist-get st :problems))))

;;;; harn-state: documents

(defvar harn-state-document-mode-map
  (let ((map (make-sparse-keymap)))
    (define-key map (kbd "RET") #'harn-state-follow-link)
    (define-key map (kbd "TAB") #'forward-button)
    (define-key map (kbd "<backtab>") #'backward-button)
    (define-key map (kbd "a") #'harn-state-code-actions)
    map))

(define-derived-mode harn-state-document-mode special-mode "Harn-Doc"
  "A read-only `harn-state:' document from harn-ls; \\[harn-state-follow-link] follows a link,
\\[revert-buffer] fetches it again, \\[harn-state-code-actions] offers its actions."
  (setq-local revert-buffer-function (lambda (&rest _) (harn-state--fetch (current-buffer)))))

(defconst harn-state--link-re
  "\\](\\(\\(?:harn-state\\|file\\):[^)[:space:]]*\\))"
  "A link target as harn-ls writes it.
`)' and white space are always percent-encoded there.")

(defun harn-state--buttonize ()
  (save-excursion
    (goto-char (point-min))
    (while (re-search-forward harn-state--link-re nil t)
      (make-text-button (match-beginning 1) (match-end 1)
                        'harn-target (match-string-no-properties 1)
                        'action (lambda (b) (harn-state-open-target (button-get b 'harn-target)))
                        'help-echo (match-string-no-properties 1)))))

(defun harn-state--set-text (buf text)
  (with-current-buffer buf
    (let ((inhibit-read-only t)
          (pos (point)))
      (erase-buffer)
      (insert text)
      (harn-state--buttonize)
      (goto-char (min pos (point-max)))
      (set-buffer-modified-p nil))))

(defun harn-state--fetch (buf)
  "Fetch BUF's document from its server (asynchronously) and show it."
  (with-current-buffer buf
    (let ((server harn-state--server) (uri harn-state--uri))
      (jsonrpc-async-request
       server :workspace/textDocumentContent (list :uri uri)
       :success-fn (lambda (result)
                     (when (buffer-live-p buf)
                       (harn-state--set-text buf (or (plist-get result :text) ""))
                       (with-current-buffer buf
                         (setq-local harn-state--fetches (1+ harn-state--fetches)))))
       :error-fn (lambda (err)
                   (when (buffer-live-p buf)
                     (harn-state--set-text buf (format "# harn-ls\n\n%s\n" (plist-get err :message)))))))))

(defvar-local harn-state--fetches 0 "How many times this document was fetched (for tests and curiosity).")

(defun harn-state--normalize (uri)
  "`harn-state:///x' and `harn-state:/x' alike, as `harn-state:/x'."
  (when (and (stringp uri) (string-match "\\`harn-state:/*\\(.*\\)\\'" uri))
    (concat "harn-state:/" (match-string 1 uri))))

;;;###autoload
(defun harn-state-open (uri &optional server)
  "Open the `harn-state:' document URI in a read-only buffer.
It comes from SERVER, else from the current project's."
  (interactive (list (read-string "harn-state URI: " "harn-state:/index.md")))
  (let* ((uri (or (harn-state--normalize uri) (user-error "Not a harn-state: URI: %s" uri)))
         (server (or server (harn-state-current-server t)))
         (buf (get-buffer-create uri)))
    (when (string-match-p "[[:cntrl:]]" uri)
      (user-error "Refused a URI with control characters"))
    (with-current-buffer buf
      (unless (derived-mode-p 'harn-state-document-mode)
        (harn-state-document-mode))
      (setq harn-state--server server
            harn-state--uri uri)
      (when (= (buffer-size) 0)
        (harn-state--set-text buf (format "# harn-ls\n\nLoading %s …\n" uri)))
      (harn-state--fetch buf))
    (pop-to-buffer-same-window buf)
    buf))

(defun harn-state-open-target (target &optional server selection)
  "Open a link TARGET: a `harn-state:' document (from SERVER), or a `file:' URI.
A file is shown at the line of its #L<line> fragment, or of an LSP SELECTION."
  (cond
   ((or (not (stringp target)) (string-match-p "[[:cntrl:]]" target))
    (user-error "Refused a link with control characters"))
   ((harn-state--normalize target)
    (harn-state-open target (or server harn-state--server)))
   ((string-prefix-p "file:" target)
    (let* ((parts (split-string target "#"))
           (path (url-unhex-string (replace-regexp-in-string "\\`file://" "" (car parts))))
           (fragment (or (cadr parts) ""))
           (line (cond ((string-match "\\`L\\([0-9]+\\)" fragment) (string-to-number (match-string 1 fragment)))
                       (selection (1+ (plist-get (plist-get selection :start) :line))))))
      (find-file path)
      (when line
        (goto-char (point-min))
        (forward-line (1- line)))
      (current-buffer)))
   (t (user-error "Not a Harn link: %s" target))))

(defun harn-state-link-at-point ()
  "The link target under point, else the only link on the line."
  (or (get-text-property (point) 'harn-target)
      (save-excursion
        (let ((eol (line-end-position)) (found nil) (count 0) (pos (point)) (here nil))
          (goto-char (line-beginning-position))
          (while (re-search-forward harn-state--link-re eol t)
            (setq count (1+ count) found (match-string-no-properties 1))
            ;; the label before `](' holds point, or the target does
            (when (and (<= (save-excursion (goto-char (match-beginning 0))
                                           (or (search-backward "[" (line-beginning-position) t) (point)))
                           pos)
                       (< pos (match-end 0)))
              (setq here found)))
          (or here (and (= count 1) found))))))

(defun harn-state-follow-link ()
  "Follow the link under point."
  (interactive)
  (let ((target (harn-state-link-at-point)))
    (if target (harn-state-open-target target) (user-error "No link here"))))

;;;; `C-x C-f harn-state:/index.md'

(defun harn-state--find-file-uri ()
  "For `find-file-not-found-functions': a `harn-state:' URI becomes its document.
Emacs makes the name \"<dir>/harn-state:/x\"; the document comes from the
project of <dir>."
  (let ((name (or buffer-file-name "")))
    (when (string-match "\\`\\(.*?/\\)\\(harn-state:/.*\\)\\'" name)
      (let ((dir (match-string 1 name))
            (uri (harn-state--normalize (match-string 2 name)))
            (buf (current-buffer)))
        (let* ((default-directory dir)
               (server (harn-state-current-server t)))
          ;; the document's own buffer, named by its URI; this one (the missing "file") goes away
          (run-at-time 0 nil (lambda ()
                               (when (buffer-live-p buf) (kill-buffer buf))
                               (let ((default-directory dir)) (harn-state-open uri server)))))
        t))))

;;;; Commands

;;;###autoload
(defun harn-state-index ()
  "Open the Harn state index of the current project."
  (interactive)
  (harn-state-open "harn-state:/index.md"))

;;;###autoload
(defun harn-state-recall (query)
  "Recall QUERY from the project's memory."
  (interactive "sRecall: ")
  (when (string-empty-p (string-trim query))
    (user-error "Recall needs a query"))
  (harn-state-open (concat "harn-state:/recall.md?q=" (url-hexify-string (string-trim query)))))

(defun harn-state--lsp-position ()
  "Point as an LSP position, in UTF-16 code units (eglot 1.9 offers no other)."
  (list :line (1- (line-number-at-pos))
        :character (let ((text (buffer-substring-no-properties (line-beginning-position) (point))))
                     (/ (length (encode-coding-string text 'utf-16le)) 2))))

;;;###autoload
(defun harn-state-hover-text ()
  "harn-ls's hover for the code at point (the facts about it), or nil."
  (let* ((server (harn-state-current-server t))
         (hover (jsonrpc-request server :textDocument/hover
                                 (list :textDocument (list :uri (concat "file://" (url-hexify-string (expand-file-name buffer-file-name) url-path-allowed-chars)))
                                       :position (harn-state--lsp-position)))))
    (when hover
      (let ((contents (plist-get hover :contents)))
        (if (stringp contents) contents (plist-get contents :value))))))

;;;###autoload
(defun harn-state-hover ()
  "Show harn-ls's hover for the code at point in a help buffer."
  (interactive)
  (let ((text (harn-state-hover-text)))
    (if (not text)
        (message "harn-state: nothing known about this line")
      (with-help-window "*harn-state hover*"
        (princ text)))))

(defun harn-state--execute (server command arguments)
  "Run COMMAND with ARGUMENTS on SERVER.
Say a failure the server reports as a result (`{ok: false}')."
  (let ((result (eglot-execute-command server (intern command) arguments)))
    (when (and (listp result) (eq (plist-get result :ok) :json-false))
      (message "harn-state: %s" (plist-get result :message)))
    result))

(defun harn-state-code-actions (&optional choose)
  "Offer the server's actions for this `harn-state:' document.
On a proposal: Accept / Reject / Compare.  CHOOSE, a function of the list
of titles, picks one (default: `completing-read')."
  (interactive)
  (unless harn-state--uri
    (user-error "Not a harn-state: document (in a state file, use `eglot-code-actions')"))
  (let* ((server harn-state--server)
         (zero '(:line 0 :character 0))
         (actions (append (jsonrpc-request server :textDocument/codeAction
                                           (list :textDocument (list :uri harn-state--uri)
                                                 :range (list :start zero :end zero)
                                                 :context (list :diagnostics [])))
                          nil))
         (titles (mapcar (lambda (a) (plist-get a :title)) actions)))
    (unless actions
      (user-error "No actions for this document"))
    (let* ((title (funcall (or choose (lambda (titles) (completing-read "Harn action: " titles nil t)))
                           titles))
           (action (cl-find title actions :key (lambda (a) (plist-get a :title)) :test #'equal))
           (command (if (stringp (plist-get action :command)) action (plist-get action :command))))
      (when command
        (harn-state--dispatch server (plist-get command :command) (plist-get command :arguments))))))

(defun harn-state--dispatch (server command arguments)
  "Run COMMAND: the client-side ones here, the others on SERVER."
  (pcase command
    ("harnState.open" (let ((arg (aref arguments 0)))
                        (harn-state-open-target (if (stringp arg) arg (plist-get arg :uri)) server)))
    ("harnState.compareWithExisting" (harn-state--compare server (aref arguments 0)))
    (_ (harn-state--execute server command arguments))))

(defun harn-state--compare (_server arg)
  "Show the file on disk that ARG names, next to the proposal document."
  (let ((path (plist-get arg :path))
        (proposal (current-buffer)))
    (find-file-other-window path)
    (with-current-buffer proposal
      (message "harn-state: the proposed %s is under \"What Accept writes\" in %s" path harn-state--uri))))

;;;; Set-up

;;;###autoload
(defun harn-state-setup ()
  "Open Harn state files in `harn-state-file-mode', managed by harn-ls."
  (dolist (pattern harn-state-file-patterns)
    (add-to-list 'auto-mode-alist (cons pattern #'harn-state-file-mode)))
  (add-to-list 'eglot-server-programs '(harn-state-file-mode . harn-state--contact))
  (add-hook 'project-find-functions #'harn-state--project-find)
  (add-hook 'find-file-not-found-functions #'harn-state--find-file-uri))

(provide 'harn-state)
;;; harn-state.el ends here
