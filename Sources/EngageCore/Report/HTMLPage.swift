/// The opening every self-contained page we serve or write shares (the report, the console):
/// `<!DOCTYPE html>` to `<body>` with UTF-8, a viewport for phones, the title and an inline
/// stylesheet, so that no page loads anything from elsewhere.
public enum HTMLPage {
    /// `title` is plain text, escaped here; `headElements` are further `<head>` elements, already
    /// markup, written after the viewport. Ends with a line break after `<body>`.
    public static func opening(title: String, stylesheet: String, headElements: [String] = []) -> String {
        var html = """
        <!DOCTYPE html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">

        """
        for element in headElements {
            html += element + "\n"
        }
        html += """
        <title>\(HTMLText.escape(title))</title>
        <style>\(stylesheet)</style>
        </head>
        <body>

        """
        return html
    }
}
