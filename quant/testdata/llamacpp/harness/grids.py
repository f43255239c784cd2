# Writes weft's quant/iqgrids.go from llama.cpp's ggml/src/ggml-common.h:
# the lattice tables as data, nothing else. Ours; run once, output committed.
import re, sys
src = open(sys.argv[1]).read()
def table(name):
    m = re.search(r'GGML_TABLE_BEGIN\((\w+), %s, (\w+)\)(.*?)GGML_TABLE_END\(\)' % name, src, re.S)
    vals = [int(v, 0) for v in re.findall(r'0x[0-9a-fA-F]+|\b\d+\b', m.group(3))]
    return m.group(1), vals
out = ['// Code generated from llama.cpp ggml/src/ggml-common.h (commit c392e5094) by a one-off script; DO NOT EDIT.',
       '// The tables are data: the 8- and 4-value lattice points of the IQ2/IQ3/IQ1 formats, one point per',
       '// entry, one byte per value (little-endian), exactly as ggml-common.h lists them.',
       '', 'package quant', '']
for name, go, doc in [('iq2xxs_grid', 'iq2xxsGrid', 'IQ2_XXS: 256 points of 8 values in {8, 25, 43}'),
                      ('iq2xs_grid', 'iq2xsGrid', 'IQ2_XS: 512 points of 8 values in {8, 25, 43}'),
                      ('iq2s_grid', 'iq2sGrid', 'IQ2_S: 1024 points of 8 values in {8, 25, 43}'),
                      ('iq3xxs_grid', 'iq3xxsGrid', 'IQ3_XXS: 256 points of 4 values in {4, 12, …, 62}'),
                      ('iq3s_grid', 'iq3sGrid', 'IQ3_S: 512 points of 4 values in {1, 3, …, 15}'),
                      ('iq1s_grid', 'iq1sGrid', 'IQ1_S and IQ1_M: 2048 points of 8 int8 values in {−1, 0, 1}')]:
    ctype, vals = table(name)
    gotype = {'uint64_t': 'uint64', 'uint32_t': 'uint32'}[ctype]
    width = 16 if gotype == 'uint64' else 8
    out.append('// %s is %s of ggml-common.h: %s.' % (go, name, doc))
    out.append('var %s = [%d]%s{' % (go, len(vals), gotype))
    per = 4 if gotype == 'uint64' else 8
    for i in range(0, len(vals), per):
        out.append('\t' + ' '.join('0x%0*x,' % (width, v) for v in vals[i:i+per]))
    out.append('}')
    out.append('')
open(sys.argv[2], 'w').write('\n'.join(out))
