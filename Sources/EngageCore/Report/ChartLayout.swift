/// Where the parts of a chart go, in user units: a column of labels, the plot, a column of notes
/// right of it; rows of `rowHeight` from `top` down, then a band for the axis. Every chart's
/// figures are here, the report's and the console's, so that they are read and changed together.
public struct ChartLayout: Sendable {
    public var labelWidth: Double
    public var plotWidth: Double
    public var noteWidth: Double
    public var top: Double
    public var rowHeight: Double
    /// Below the last row: the axis and its labels.
    public var axisHeight: Double

    public var width: Double { labelWidth + plotWidth + noteWidth }
    public var plotLeft: Double { labelWidth }
    public var plotRight: Double { labelWidth + plotWidth }

    public func rowTop(_ index: Int) -> Double { top + Double(index) * rowHeight }
    public func plotBottom(rows: Int) -> Double { top + Double(rows) * rowHeight }
    public func height(rows: Int) -> Double { plotBottom(rows: rows) + axisHeight }

    // The report page (EngageCore/Report).
    static let rateIntervals = ChartLayout(labelWidth: 120, plotWidth: 340, noteWidth: 250, top: 10, rowHeight: 40,
                                           axisHeight: 26)
    /// A column per side: its bar, then its count and share and the gap to the next side.
    static let funnel = ChartLayout(labelWidth: 80, plotWidth: 160, noteWidth: 96 + 12, top: 24, rowHeight: 26,
                                    axisHeight: 4)
    /// `top`: the legend.
    static let outcomeBars = ChartLayout(labelWidth: 200, plotWidth: 420, noteWidth: 90, top: 28, rowHeight: 26,
                                         axisHeight: 4)
    static let latency = ChartLayout(labelWidth: 200, plotWidth: 420, noteWidth: 190, top: 30, rowHeight: 36,
                                     axisHeight: 24)
    static let forestPlot = ChartLayout(labelWidth: 150, plotWidth: 360, noteWidth: 190, top: 8, rowHeight: 24,
                                        axisHeight: 30)

    // The console (EngageConsole): 360 units wide, so that a chart reads on a phone without zooming.
    public static let consoleRates = ChartLayout(labelWidth: 86, plotWidth: 262, noteWidth: 12, top: 6, rowHeight: 30,
                                                 axisHeight: 20)
    /// One row, the plot: the lift's axis labels left of it, looks along the bottom.
    public static let consoleLiftPerLook = ChartLayout(labelWidth: 44, plotWidth: 308, noteWidth: 8, top: 8, rowHeight: 180,
                                                       axisHeight: 22)
    /// A row per summary: its label over its bar.
    public static let consoleSparkline = ChartLayout(labelWidth: 0, plotWidth: 360, noteWidth: 0, top: 0, rowHeight: 70,
                                                     axisHeight: 14)
    public static let consoleOutcomes = ChartLayout(labelWidth: 0, plotWidth: 360, noteWidth: 0, top: 0, rowHeight: 34,
                                                    axisHeight: 4)
}
