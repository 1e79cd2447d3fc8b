package link

import "strings"

// Cells of the CSV the shortener writes (the export, the stats) and reads
// back (an import of an export): a cell a spreadsheet would run as a
// formula is neutralised, exactly reversibly.

// csvFormulaStart are the first characters of a cell that a spreadsheet
// runs as a formula (= + - @, and TAB or CR before one), with the '
// that marks a guarded cell.
const csvFormulaStart = "=+-@\t\r'"

// CSVCell neutralises a cell a spreadsheet would run as a formula: one
// starting with = + - @ TAB or CR gets a leading ', and so does one that
// already starts with ', so that the rule can be undone exactly
// (CSVUncell): a cell starting with ' lost its first character.
func CSVCell(s string) string {
	if CSVFormula(s) {
		return "'" + s
	}
	return s
}

// CSVUncell undoes CSVCell: an import of an export reads the cells as
// they were.
func CSVUncell(s string) string {
	return strings.TrimPrefix(s, "'")
}

// CSVFormula reports whether CSVCell guards cell: a spreadsheet would read
// it as a formula, or it already starts with the ' that neutralises one.
func CSVFormula(cell string) bool {
	return cell != "" && strings.ContainsRune(csvFormulaStart, rune(cell[0]))
}
