from gpulab.tables import Table


def test_a_table_prints_aligned_columns_and_html_with_escaping():
    table = Table([{"gpu": "T4", "GB/s": 320}, {"gpu": "H100 <SXM>", "GB/s": 3350}])
    lines = str(table).splitlines()
    assert lines[0].split() == ["gpu", "GB/s"] and set(lines[1]) <= {"-", " "}
    assert lines[2].index("320") == lines[3].index("3350") == lines[0].index("GB/s")
    html = table._repr_html_()
    assert html.count("<tr>") == 3 and "H100 &lt;SXM&gt;" in html
    assert str(Table()) == "(empty)"
