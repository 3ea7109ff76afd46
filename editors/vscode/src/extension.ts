// advise for VS Code: the language client of `advise server`, the Findings
// and Profile views, the heat map (GPU time or device memory), and the commands around them.
import * as vscode from 'vscode';
import { AdviseClient, DOCUMENT_SELECTOR, MAX_RESTARTS, ServerState } from './client';
import { applySafeFixes, checkWorkspace, compareProfiles, openReport, profileCommand } from './commands';
import { applyFix, ignoreOnLine, openRuleDocs, revealFinding, setup as setupFindingActions } from './findingActions';
import { FindingsProvider } from './findingsView';
import { HeatMap } from './heatMap';
import { GroupBy } from './model/findings';
import { profileStatus } from './model/profile';
import { ProfileProvider } from './profileView';
import { ReadOnlyDocuments } from './readonly';

const GROUP_KEY = 'advise.findingsGroup';

/** What the extension hands to other extensions and to its tests. */
export interface AdviseApi {
    client: AdviseClient;
    findings: FindingsProvider;
    profile: ProfileProvider;
    heatMap: HeatMap;
}

function serverStatus(item: vscode.LanguageStatusItem, advise: AdviseClient, state: ServerState) {
    const words: Record<ServerState, [string, string, vscode.LanguageStatusSeverity]> = {
        starting: ['$(loading~spin) advise starting', 'advise server is starting', vscode.LanguageStatusSeverity.Information],
        running: ['$(check) advise', `advise server ${advise.serverVersion} is running (${advise.binary?.path ?? ''})`,
                  vscode.LanguageStatusSeverity.Information],
        stopped: ['$(circle-slash) advise stopped', 'advise server is stopped', vscode.LanguageStatusSeverity.Warning],
        crashed: ['$(error) advise crashed', advise.problem || `advise server stopped unexpectedly (restarted at most ${MAX_RESTARTS} times)`,
                  vscode.LanguageStatusSeverity.Error],
        missing: ['$(error) advise not found', advise.problem, vscode.LanguageStatusSeverity.Error],
    };
    const [text, detail, severity] = words[state];
    item.text = text;
    item.detail = detail;
    item.severity = severity;
    item.busy = state === 'starting';
    item.command = state === 'missing'
        ? { title: 'Set advise.path', command: 'workbench.action.openSettings', arguments: ['advise.path'] }
        : state === 'crashed' || state === 'stopped'
            ? { title: 'Restart', command: 'advise.restartServer' }
            : { title: 'Show output', command: 'advise.showOutput' };
}

export async function activate(context: vscode.ExtensionContext): Promise<AdviseApi> {
    const output = vscode.window.createOutputChannel('advise');
    const trace = vscode.window.createOutputChannel('advise (trace)');
    const advise = new AdviseClient(output, trace);
    current = advise;
    const documents = new ReadOnlyDocuments();
    setupFindingActions(advise, documents);
    context.subscriptions.push(output, trace, advise, documents);

    // ---- views -------------------------------------------------------------------
    const group = context.workspaceState.get<GroupBy>(GROUP_KEY, 'file');
    await vscode.commands.executeCommand('setContext', GROUP_KEY, group);
    const findings = new FindingsProvider(advise, group);
    const findingsView = vscode.window.createTreeView('advise.findings', { treeDataProvider: findings, showCollapseAll: true });
    findings.view = findingsView;
    const profile = new ProfileProvider(advise);
    const profileView = vscode.window.createTreeView('advise.profile', { treeDataProvider: profile, showCollapseAll: true });
    profile.view = profileView;
    const heatMap = new HeatMap(advise);
    context.subscriptions.push(findings, findingsView, profile, profileView, heatMap);

    // ---- language status -------------------------------------------------------------
    const serverItem = vscode.languages.createLanguageStatusItem('advise.server', DOCUMENT_SELECTOR);
    serverItem.name = 'advise server';
    const profileItem = vscode.languages.createLanguageStatusItem('advise.profile', DOCUMENT_SELECTOR);
    profileItem.name = 'advise profile';
    profileItem.text = 'no profile';
    context.subscriptions.push(serverItem, profileItem);
    serverStatus(serverItem, advise, advise.state);
    context.subscriptions.push(profile.onDidChangeSummary((summary) => {
        if (!summary) {
            profileItem.text = 'profile: —';
            profileItem.detail = advise.unsupported.has('advise/profileSummary')
                ? 'this advise server does not report profiles (update advise)' : 'no profile information';
            profileItem.severity = vscode.LanguageStatusSeverity.Information;
            return;
        }
        const s = profileStatus(summary);
        profileItem.text = s.text;
        profileItem.detail = s.detail;
        profileItem.severity = s.stale ? vscode.LanguageStatusSeverity.Warning : vscode.LanguageStatusSeverity.Information;
        profileItem.command = { title: 'Show profile', command: 'advise.profile.focus' };
    }));

    // ---- what refreshes what ------------------------------------------------------------
    context.subscriptions.push(
        advise.onDidChangeState((state) => {
            serverStatus(serverItem, advise, state);
            if (state === 'running' || state === 'missing' || state === 'crashed') {
                void findings.refresh();
                void profile.refresh();
            }
        }),
        advise.onDidChangeProfiles(() => {
            findings.refreshSoon(300);
            void profile.refresh();
        }),
        vscode.workspace.onDidSaveTextDocument((doc) => {
            if (vscode.languages.match(DOCUMENT_SELECTOR, doc) > 0) {
                findings.refreshSoon(1000);
                void profile.refresh();
            }
        }),
        vscode.window.onDidChangeActiveTextEditor(() => void profile.refresh()),
        vscode.workspace.onDidGrantWorkspaceTrust(() => void advise.restart()),
        vscode.workspace.onDidChangeConfiguration((e) => {
            if (e.affectsConfiguration('advise.path')) void advise.restart();
        }),
    );

    // ---- commands ---------------------------------------------------------------------
    const setGroup = async (g: GroupBy) => {
        await context.workspaceState.update(GROUP_KEY, g);
        await vscode.commands.executeCommand('setContext', GROUP_KEY, g);
        findings.setGroupBy(g);
    };
    const register = (id: string, f: (...args: any[]) => unknown) =>
        context.subscriptions.push(vscode.commands.registerCommand(id, f));
    register('advise.profileCommand', () => profileCommand(advise, context.workspaceState));
    register('advise.workspace.check', () => checkWorkspace(advise));
    register('advise.document.applySafeFixes', (uri?: vscode.Uri) => applySafeFixes(advise, uri));
    register('advise.openReport', () => openReport(advise, documents));
    register('advise.compareProfiles', () => compareProfiles(advise, documents, (profile.summary?.profiles ?? []).map((p) => p.path)));
    register('advise.restartServer', () => advise.restart());
    register('advise.showOutput', () => output.show(true));
    register('advise.toggleHeatMap', () => heatMap.toggle());
    register('advise.switchHeatMapMetric', () => heatMap.switchMetric());
    register('advise.groupByFile', () => setGroup('file'));
    register('advise.groupByRule', () => setGroup('rule'));
    register('advise.refreshFindings', () => findings.refresh());
    register('advise.finding.reveal', (node) => revealFinding(node));
    register('advise.finding.applyFix', (node) => applyFix(node));
    register('advise.finding.ignoreLine', (node) => ignoreOnLine(node));
    register('advise.finding.openDocs', (node) => openRuleDocs(node));

    void advise.start();
    return { client: advise, findings, profile, heatMap };
}

let current: AdviseClient | undefined;

/** stops the server (shutdown, exit) before VS Code unloads the extension */
export function deactivate(): Thenable<void> | undefined {
    return current?.stop();
}
